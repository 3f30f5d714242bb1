//! ACL request signing, as Apache RocketMQ's Java client does it (`AclClientRPCHook`).
//!
//! A broker with ACL enabled (4.x's `PlainAccessValidator`, 5.x's authentication) wants every
//! request to carry three `extFields` more: `AccessKey`, optionally `SecurityToken`, and
//! `Signature`, an HMAC of the request's content keyed by the secret key. [`sign`] adds them;
//! [`verify`] is the broker's side of the check, for simulated brokers and tests.
//!
//! What is signed (`AclClientRPCHook.doBeforeRequest` and `AclUtils.combineRequestContent`,
//! `acl/src/main/java/org/apache/rocketmq/acl/common/` in 4.9.x and 5.x, moved to
//! `client/src/main/java/...` on develop; identical in 4.9.4 to 4.9.8 and 5.0 to 5.3, which
//! only reformat the code):
//!
//! 1. `AccessKey` (and `SecurityToken` when the credentials have one) are put in `extFields`
//!    first, so they are signed too;
//! 2. the `extFields` are sorted by key in a `TreeMap`, i.e. by `String.compareTo`: UTF-16
//!    code units, not UTF-8 bytes ([`java_string_cmp`]);
//! 3. their *values* are concatenated in that order, skipping the one under `Signature` (so
//!    signing a signed request replaces its signature), and encoded as UTF-8
//!    (`SessionCredentials.CHARSET`);
//! 4. the body's bytes are appended as they are (`AclUtils.combineBytes`; 5.x returns either
//!    part alone when the other is empty, 4.9.x always copies: the same bytes, and both sign
//!    the empty content, whose signature the tests pin);
//! 5. the HMAC (`AclSigner.DEFAULT_ALGORITHM`, `HmacSHA1`, keyed by the secret key's UTF-8
//!    bytes) is Base64-encoded with commons-codec's `Base64.encodeBase64`: the standard
//!    alphabet, padded, no line breaks.
//!
//! One key is treated apart: `_UNIQUE_KEY_QUERY` (`MixAll.UNIQUE_MSG_QUERY_FLAG`), which
//! `MQClientAPIImpl.queryMessage` adds to `QUERY_MESSAGE` requests besides the header. Clients
//! before 4.9.4 signed only the header's fields (`parseRequestContent` read the header class;
//! commit `a4a5370632` switched to all `extFields`), so they never signed it, and brokers still
//! leave it out for requests whose version is at most `V4_9_3` (ordinal 399):
//! `PlainAccessResource.parse` since 5.1.0 (commit `86bc27eb24`, issue #5310) and
//! `DefaultAuthenticationContextBuilder.build` in 5.3. Brokers of 4.9.x
//! (`PlainAccessValidator.parse`, to 4.9.8) and 5.0 leave it out of every request, so no 4.9.x
//! broker accepts a query by unique key from a 4.9.4+ client, Java's included. [`sign`] and
//! [`verify`] follow the 5.1+ rule: for versions up to 399 the key is not signed, which every
//! broker accepts; from 400 on it is, as Java's current hook does. This crate's
//! [`DEFAULT_VERSION`](crate::command::DEFAULT_VERSION) is below 400.
//!
//! Where Java's broker reads a field differently from what the client signed, the check fails
//! for Java's clients too: a binary (`ROCKETMQ`) header carries an empty value as length 0,
//! which `RocketMQSerializable.readStr` reads back as null and the broker signs as `"null"`.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::digest::KeyInit;
use hmac::{Hmac, Mac};
use sha1::Sha1;
use sha2::Sha256;

use crate::command::Command;
use crate::ext::ExtFields;
use crate::queue::java_string_cmp;

/// The `extFields` key of the access key (`SessionCredentials.ACCESS_KEY`).
pub const ACCESS_KEY: &str = "AccessKey";
/// The `extFields` key of the security token (`SessionCredentials.SECURITY_TOKEN`).
pub const SECURITY_TOKEN: &str = "SecurityToken";
/// The `extFields` key of the signature (`SessionCredentials.SIGNATURE`).
pub const SIGNATURE: &str = "Signature";
/// The `extFields` key a query by unique key carries (`MixAll.UNIQUE_MSG_QUERY_FLAG`); see the
/// [module documentation](self) for when it is signed.
pub const UNIQUE_MSG_QUERY_FLAG: &str = "_UNIQUE_KEY_QUERY";

/// `MQVersion.Version.V4_9_3.ordinal()`, read from the 4.9.7 and 5.3.1 jars: the last version
/// whose requests brokers check without [`UNIQUE_MSG_QUERY_FLAG`].
pub const LAST_VERSION_UNSIGNED_UNIQUE_KEY: i32 = 399;

/// An access key and its secret, with an optional security token (Java's
/// `SessionCredentials`).
///
/// `Debug` shows the access key only: the secret key and the token print as `"<redacted>"`.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    access_key: String,
    secret_key: String,
    security_token: Option<String>,
}

impl Credentials {
    /// Credentials with no security token.
    ///
    /// Java's `SecretKeySpec` refuses an empty secret key ("Empty key"), so its hook throws
    /// rather than send the request, and no broker can check such a signature. [`sign`] still
    /// signs with it (HMAC is defined for an empty key) and [`verify`] refuses it.
    pub fn new(access_key: impl Into<String>, secret_key: impl Into<String>) -> Self {
        Self {
            access_key: access_key.into(),
            secret_key: secret_key.into(),
            security_token: None,
        }
    }

    /// Adds a security token, sent as `SecurityToken` and signed with the rest.
    pub fn with_security_token(mut self, token: impl Into<String>) -> Self {
        self.security_token = Some(token.into());
        self
    }

    /// The access key, sent in the clear as `AccessKey`.
    pub fn access_key(&self) -> &str {
        &self.access_key
    }

    /// The secret key, which never leaves this process.
    pub fn secret_key(&self) -> &str {
        &self.secret_key
    }

    /// The security token, if any.
    pub fn security_token(&self) -> Option<&str> {
        self.security_token.as_deref()
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Java's `SessionCredentials.toString` prints the secret key; this does not, so
        // credentials can sit in configs that get logged.
        f.debug_struct("Credentials")
            .field("access_key", &self.access_key)
            .field("secret_key", &"<redacted>")
            .field(
                "security_token",
                &self.security_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// The HMAC of a signature (Java's `SigningAlgorithm`, whose third value, `HmacMD5`, is not
/// offered here).
///
/// Java's hook and every Apache broker use `AclSigner.DEFAULT_ALGORITHM`, `HmacSHA1`, with no
/// setting to change it: `HmacSHA256` is reachable only by calling `AclSigner.calSignature`
/// with it explicitly, so it interoperates with no Apache broker, only with peers that agree on
/// it out of band.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SignatureAlgorithm {
    /// HMAC-SHA1, Java's `SigningAlgorithm.HmacSHA1`: what Apache's clients and brokers use.
    #[default]
    HmacSha1,
    /// HMAC-SHA256, Java's `SigningAlgorithm.HmacSHA256`.
    HmacSha256,
}

impl SignatureAlgorithm {
    /// Java's name of the algorithm (`SigningAlgorithm.toString()`, the JCA `Mac` name).
    pub fn java_name(self) -> &'static str {
        match self {
            Self::HmacSha1 => "HmacSHA1",
            Self::HmacSha256 => "HmacSHA256",
        }
    }
}

/// Signs `command` as Java's `AclClientRPCHook.doBeforeRequest` does: sets `AccessKey` (and
/// `SecurityToken` when the credentials have one), then `Signature` over
/// [`command_content`].
///
/// Signing again replaces the signature (the old one is not part of the content). As in Java, a
/// `SecurityToken` already present stays, and is signed, when the new credentials have none.
pub fn sign(command: &mut Command, credentials: &Credentials, algorithm: SignatureAlgorithm) {
    command
        .ext_fields
        .insert(ACCESS_KEY, credentials.access_key.as_str());
    if let Some(token) = &credentials.security_token {
        command.ext_fields.insert(SECURITY_TOKEN, token.as_str());
    }
    let content = command_content(command);
    let signature = signature(&content, &credentials.secret_key, algorithm);
    command.ext_fields.insert(SIGNATURE, signature);
}

/// Whether `command` carries an `AccessKey` and a `Signature` that is the signature of
/// [`command_content`] under `secret_key`, as a 5.1+ broker checks it
/// (`DefaultAuthenticationHandler.doAuthenticate`, `PlainPermissionManager.validate`).
///
/// The caller looks the secret up by the command's `AccessKey`. The comparison takes the same
/// time wherever the signatures differ. An empty secret key never verifies: Java cannot compute
/// an HMAC with one.
pub fn verify(command: &Command, secret_key: &str, algorithm: SignatureAlgorithm) -> bool {
    if secret_key.is_empty() || command.ext_fields.get(ACCESS_KEY).is_none() {
        return false;
    }
    let Some(sent) = command.ext_fields.get(SIGNATURE) else {
        return false;
    };
    // The standard engine decodes canonical, padded Base64 only, so this accepts exactly the
    // strings Java's `String.equals` against its own encoding would.
    let Ok(sent) = STANDARD.decode(sent) else {
        return false;
    };
    let content = command_content(command);
    match algorithm {
        SignatureAlgorithm::HmacSha1 => keyed::<Hmac<Sha1>>(secret_key, &content)
            .verify_slice(&sent)
            .is_ok(),
        SignatureAlgorithm::HmacSha256 => keyed::<Hmac<Sha256>>(secret_key, &content)
            .verify_slice(&sent)
            .is_ok(),
    }
}

/// What [`sign`] signs and [`verify`] checks for `command`: [`signing_content`] of its
/// `extFields` and body, without [`UNIQUE_MSG_QUERY_FLAG`] when `command.version` is at most
/// [`LAST_VERSION_UNSIGNED_UNIQUE_KEY`] (see the [module documentation](self)).
pub fn command_content(command: &Command) -> Vec<u8> {
    let skip_unique_key = command.version <= LAST_VERSION_UNSIGNED_UNIQUE_KEY;
    content(&command.ext_fields, &command.body, |key| {
        key == SIGNATURE || (skip_unique_key && key == UNIQUE_MSG_QUERY_FLAG)
    })
}

/// The bytes Java's hook signs: the values of `ext_fields` other than `Signature`, in
/// `String.compareTo` order of their keys, as UTF-8, then `body` (`AclUtils.combineRequestContent`
/// over `new TreeMap<>(extFields)`).
pub fn signing_content(ext_fields: &ExtFields, body: &[u8]) -> Vec<u8> {
    content(ext_fields, body, |key| key == SIGNATURE)
}

/// The Base64 HMAC of `content` keyed by `secret_key`'s UTF-8 bytes (`AclSigner.calSignature`).
pub fn signature(content: &[u8], secret_key: &str, algorithm: SignatureAlgorithm) -> String {
    let tag = match algorithm {
        SignatureAlgorithm::HmacSha1 => keyed::<Hmac<Sha1>>(secret_key, content)
            .finalize()
            .into_bytes()
            .to_vec(),
        SignatureAlgorithm::HmacSha256 => keyed::<Hmac<Sha256>>(secret_key, content)
            .finalize()
            .into_bytes()
            .to_vec(),
    };
    STANDARD.encode(tag)
}

fn content(ext_fields: &ExtFields, body: &[u8], skip: impl Fn(&str) -> bool) -> Vec<u8> {
    // `ExtFields` iterates in UTF-8 byte order, which is code point order; Java's `TreeMap`
    // orders by UTF-16 code units, which differs once keys hold characters above U+FFFF.
    let mut fields: Vec<(&str, &str)> = ext_fields.iter().filter(|(k, _)| !skip(k)).collect();
    fields.sort_by(|a, b| java_string_cmp(a.0, b.0));
    let len = fields.iter().map(|(_, v)| v.len()).sum::<usize>() + body.len();
    let mut out = Vec::with_capacity(len);
    for (_, value) in fields {
        // Java concatenates the strings, then encodes: the same bytes, since a Rust string
        // holds no lone surrogate that could pair with its neighbour's.
        out.extend_from_slice(value.as_bytes());
    }
    out.extend_from_slice(body);
    out
}

fn keyed<M: Mac + KeyInit>(secret_key: &str, content: &[u8]) -> M {
    let mut mac = <M as KeyInit>::new_from_slice(secret_key.as_bytes()).expect(
        "HMAC takes keys of any length (RFC 2104: long keys are hashed, short ones padded)",
    );
    mac.update(content);
    mac
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::RequestCode;

    fn request(fields: &[(&str, &str)]) -> Command {
        Command::request_with_fields(
            RequestCode::PULL_MESSAGE,
            fields
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        )
    }

    #[test]
    fn content_orders_keys_by_utf16_and_skips_signature() {
        let command = request(&[
            ("k\u{FF61}", "c"),
            ("k\u{1F600}", "b"),
            ("kZ", "a"),
            (SIGNATURE, "old"),
        ]);
        assert_eq!(signing_content(&command.ext_fields, b"!"), b"abc!");
    }

    #[test]
    fn unique_key_flag_is_signed_from_version_400() {
        let mut command = request(&[("topic", "T"), (UNIQUE_MSG_QUERY_FLAG, "true")]);
        command.version = LAST_VERSION_UNSIGNED_UNIQUE_KEY;
        assert_eq!(command_content(&command), b"T");
        command.version = LAST_VERSION_UNSIGNED_UNIQUE_KEY + 1;
        assert_eq!(command_content(&command), b"trueT");
    }

    #[test]
    fn empty_secret_never_verifies() {
        let mut command = request(&[("topic", "T")]);
        sign(
            &mut command,
            &Credentials::new("ak", ""),
            SignatureAlgorithm::default(),
        );
        assert!(command.ext_fields.get(SIGNATURE).is_some());
        assert!(!verify(&command, "", SignatureAlgorithm::default()));
    }

    #[test]
    fn algorithm_names_are_javas() {
        assert_eq!(SignatureAlgorithm::default().java_name(), "HmacSHA1");
        assert_eq!(SignatureAlgorithm::HmacSha256.java_name(), "HmacSHA256");
    }
}
