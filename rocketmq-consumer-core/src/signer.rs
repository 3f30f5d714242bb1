//! Request signing for clusters with ACL: the credentials in use, swapped at run time when the
//! application rotates them, and the one place requests are signed before they leave.

use std::fmt;
use std::sync::Arc;

use proto::acl::{self, Credentials, SignatureAlgorithm};
use proto::{Command, ResponseCode};

/// Whether an answer with `code` and `remark` refuses a request for want of credentials or
/// permission.
///
/// Brokers say it three ways:
/// - `NO_PERMISSION` (16): Java 5.x's `AuthenticationException`/`AuthorizationException`
///   handlers, the Rust broker, and the 4.x checks on a topic's or broker's read/write perm;
/// - `SYSTEM_ERROR` (1) with an `AclException` remark: Java 4.9's `PlainAccessValidator`
///   throws from the RPC hook, and `NettyRemotingAbstract.processRequestCommand` answers any
///   exception a hook throws with `SYSTEM_ERROR` and the exception's simple description;
/// - `SYSTEM_ERROR` with an `AuthenticationException` / `AuthorizationException` remark, the
///   same path on a 5.x remoting server whose hook threw.
pub fn is_access_refusal(code: ResponseCode, remark: Option<&str>) -> bool {
    match code {
        ResponseCode::NO_PERMISSION => true,
        ResponseCode::SYSTEM_ERROR => remark.is_some_and(|remark| {
            [
                "AclException",
                "AuthenticationException",
                "AuthorizationException",
            ]
            .iter()
            .any(|name| remark.contains(name))
        }),
        _ => false,
    }
}

/// Signs every request with the current credentials, or none when there are none.
///
/// Only requests are signed: Java's `AclClientRPCHook` signs in `doBeforeRequest` and leaves
/// `doAfterResponse` empty, so the answers a client gives to broker-initiated requests
/// (running info, consume directly) go unsigned, and brokers do not check them.
#[derive(Clone, Default)]
pub(crate) struct Signer {
    credentials: Option<Arc<Credentials>>,
    algorithm: SignatureAlgorithm,
}

impl Signer {
    /// A signer with `credentials` (none: requests leave unsigned).
    pub(crate) fn new(credentials: Option<Credentials>, algorithm: SignatureAlgorithm) -> Self {
        Self {
            credentials: credentials.map(Arc::new),
            algorithm,
        }
    }

    /// Uses `credentials` from now on: every request signed after this call, including those
    /// already queued but not yet handed out, carries them.
    pub(crate) fn set_credentials(&mut self, credentials: Option<Credentials>) {
        self.credentials = credentials.map(Arc::new);
    }

    /// Signs `command` when it is a request and there are credentials.
    pub(crate) fn sign(&self, command: &mut Command) {
        if let Some(credentials) = &self.credentials
            && !command.is_response()
        {
            acl::sign(command, credentials, self.algorithm);
        }
    }
}

impl fmt::Debug for Signer {
    // The credentials' own `Debug` hides the secret; this shows only the access key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signer")
            .field(
                "access_key",
                &self.credentials.as_deref().map(Credentials::access_key),
            )
            .field("algorithm", &self.algorithm)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use proto::{RequestCode, ResponseCode};

    use super::*;

    fn heartbeat() -> Command {
        let mut command = Command::request_with_fields(RequestCode::HEART_BEAT, Default::default());
        command.body = bytes::Bytes::from_static(b"{}");
        command
    }

    /// Requests carry a signature the broker can check; answers to brokers and a signer without
    /// credentials leave commands as they are; rotated credentials sign from then on.
    #[test]
    fn requests_are_signed_with_the_current_credentials() {
        let mut signer = Signer::default();
        let mut unsigned = heartbeat();
        signer.sign(&mut unsigned);
        assert!(unsigned.ext_fields.get(acl::SIGNATURE).is_none());

        signer.set_credentials(Some(Credentials::new("ak", "old-secret")));
        let mut request = heartbeat();
        signer.sign(&mut request);
        assert!(acl::verify(
            &request,
            "old-secret",
            SignatureAlgorithm::HmacSha1
        ));

        let mut answer = Command::response(ResponseCode::SUCCESS, 3);
        signer.sign(&mut answer);
        assert!(answer.ext_fields.is_empty());

        signer.set_credentials(Some(Credentials::new("ak", "new-secret")));
        let mut rotated = heartbeat();
        signer.sign(&mut rotated);
        assert!(acl::verify(
            &rotated,
            "new-secret",
            SignatureAlgorithm::HmacSha1
        ));
        assert!(!acl::verify(
            &rotated,
            "old-secret",
            SignatureAlgorithm::HmacSha1
        ));
        assert!(!format!("{signer:?}").contains("new-secret"));
    }
}
