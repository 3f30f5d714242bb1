//! ACL signing never panics, whatever the `extFields`, body, credentials, version and algorithm:
//! a signed command verifies (unless the secret key is empty, which Java cannot sign with),
//! signing it again gives the same signature, a different secret does not verify it, and it
//! still verifies after an encode/decode round trip that kept its `extFields`.

use bytes::BytesMut;
use rocketmq_proto::acl::{self, Credentials, SIGNATURE, SignatureAlgorithm};
use rocketmq_proto::{Command, ExtFields, FrameDecoder, HeaderEncoding, RequestCode, frame};

/// Reads the fuzz input as length-prefixed chunks; empty ones once it runs out.
struct Chunks<'a>(&'a [u8]);

impl<'a> Chunks<'a> {
    fn byte(&mut self) -> u8 {
        let Some((&b, rest)) = self.0.split_first() else {
            return 0;
        };
        self.0 = rest;
        b
    }
    fn bytes(&mut self) -> &'a [u8] {
        let len = usize::from(self.byte()).min(self.0.len());
        let (chunk, rest) = self.0.split_at(len);
        self.0 = rest;
        chunk
    }
    fn string(&mut self) -> String {
        String::from_utf8_lossy(self.bytes()).into_owned()
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Runs the check on one input; panics when it finds a fault.
pub fn check(data: &[u8]) {
    let mut c = Chunks(data);
    let flags = c.byte();
    let algorithm = if flags & 1 == 0 {
        SignatureAlgorithm::HmacSha1
    } else {
        SignatureAlgorithm::HmacSha256
    };
    // Around V4_9_3 (399), where brokers start to check `_UNIQUE_KEY_QUERY`.
    let version = 396 + i32::from(flags >> 4);
    let mut credentials = Credentials::new(c.string(), c.string());
    if flags & 2 != 0 {
        credentials = credentials.with_security_token(c.string());
    }
    let body = c.bytes().to_vec();
    let mut ext_fields = ExtFields::new();
    while !c.is_empty() {
        ext_fields.insert(c.string(), c.string());
    }

    let mut command =
        Command::request_with_fields(RequestCode::PULL_MESSAGE, ext_fields).with_body(body);
    command.version = version;
    acl::sign(&mut command, &credentials, algorithm);
    let secret = credentials.secret_key();
    assert_eq!(acl::verify(&command, secret, algorithm), !secret.is_empty());
    let wrong = format!("{secret}x");
    assert!(!acl::verify(&command, &wrong, algorithm));

    let first = command.ext_fields.get(SIGNATURE).map(str::to_owned);
    acl::sign(&mut command, &credentials, algorithm);
    assert_eq!(command.ext_fields.get(SIGNATURE), first.as_deref());

    let encoding = if flags & 4 == 0 {
        HeaderEncoding::Json
    } else {
        HeaderEncoding::Binary
    };
    let mut wire = BytesMut::new();
    if frame::encode(&command, encoding, &mut wire).is_err() {
        return;
    }
    let received = FrameDecoder::default()
        .decode(&mut wire)
        .expect("an encoded command decodes")
        .expect("an encoded command is one whole frame");
    // Binary headers carry an empty key or value as length 0, which decodes as absent here and
    // as null in Java (`RocketMQSerializable.readStr`): such a field does not make the trip.
    if received.ext_fields == command.ext_fields {
        assert_eq!(
            acl::verify(&received, secret, algorithm),
            !secret.is_empty()
        );
    }
}
