//! ACL signing gives, byte for byte, the `Signature` Java's `AclClientRPCHook` gives for the
//! same request (pull header, body with non-ASCII and binary bytes, security token, keys whose
//! UTF-16 order is not their UTF-8 order, `_UNIQUE_KEY_QUERY`, a request signed twice); signing
//! again replaces the signature; `Debug` of credentials hides the secrets; and `verify` accepts
//! what `sign` made, also after a trip over the wire, and refuses a changed body, a changed
//! field, a wrong secret and a missing signature.
//!
//! The vectors come from Java: a throwaway program (kept out of this repository) built against
//! `org.apache.rocketmq:rocketmq-acl` and `rocketmq-remoting` 4.9.7 from Maven Central, run on
//! JDK 17. It built each request with `RemotingCommand.createRequestCommand(code, null)` and
//! `addExtField`, set the body, called `new AclClientRPCHook(new SessionCredentials(ak, sk[,
//! token])).doBeforeRequest(addr, request)` and printed `extFields.get("Signature")`, plus
//! `AclUtils.combineRequestContent` and `AclSigner.calSignature(.., HmacSHA256, UTF_8)` where
//! noted. The same program against the 5.3.1 jars printed identical values for every case.

use bytes::BytesMut;
use rocketmq_proto::acl::{
    self, ACCESS_KEY, Credentials, SECURITY_TOKEN, SIGNATURE, SignatureAlgorithm,
    UNIQUE_MSG_QUERY_FLAG,
};
use rocketmq_proto::{
    Command, ExtFields, FrameDecoder, HeaderEncoding, RequestCode, frame, headers,
};

const ACCESS: &str = "RocketMQ";
const SECRET: &str = "12345678";

fn credentials() -> Credentials {
    Credentials::new(ACCESS, SECRET)
}

fn fields(pairs: &[(&str, &str)]) -> ExtFields {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn signed(mut command: Command, credentials: &Credentials) -> Command {
    acl::sign(&mut command, credentials, SignatureAlgorithm::default());
    command
}

fn signature(command: &Command) -> &str {
    command
        .ext_fields
        .get(SIGNATURE)
        .expect("a signed command has a Signature")
}

fn pull_request() -> Command {
    let header = headers::PullMessageRequest {
        consumer_group: "please_rename_unique_group_name".into(),
        topic: "TopicTest".into(),
        queue_id: 3,
        queue_offset: 1024,
        max_msg_nums: 32,
        sys_flag: 3,
        commit_offset: 1000,
        suspend_timeout_millis: 15000,
        subscription: Some("TagA || TagB".into()),
        sub_version: 1_718_000_000_000,
        expression_type: Some("TAG".into()),
        max_msg_bytes: None,
        broker_name: None,
    };
    Command::request(RequestCode::PULL_MESSAGE, &header)
}

/// `héllo 世界 😀` in UTF-8, then bytes that are not UTF-8.
const SEND_BODY: &[u8] =
    b"h\xc3\xa9llo \xe4\xb8\x96\xe7\x95\x8c \xf0\x9f\x98\x80\x00\xff\x80\xc3(\x7f";

fn send_request() -> Command {
    Command::request_with_fields(
        RequestCode::SEND_MESSAGE_V2,
        fields(&[
            ("a", "producer_group"),
            ("b", "TopicTest"),
            ("e", "0"),
            ("i", "TAGS\u{1}标签\u{2}UNIQ_KEY\u{1}ABC\u{2}"),
        ]),
    )
    .with_body(SEND_BODY)
}

fn query_request() -> Command {
    Command::request_with_fields(
        RequestCode(12), // QUERY_MESSAGE, which this crate does not name
        fields(&[
            ("topic", "TopicTest"),
            ("key", "AC1100017F0018B4AAC2"),
            ("maxNum", "32"),
            ("beginTimestamp", "0"),
            ("endTimestamp", "9223372036854775807"),
            (UNIQUE_MSG_QUERY_FLAG, "true"),
        ]),
    )
}

#[test]
fn pull_header_matches_java() {
    let command = signed(pull_request(), &credentials());
    assert_eq!(signature(&command), "ytTLKkdW7PGBPhFUZDnSJQ4JuP4=");
    assert_eq!(command.ext_fields.get(ACCESS_KEY), Some(ACCESS));
    assert_eq!(command.ext_fields.get(SECURITY_TOKEN), None);
    // Java's `AclUtils.combineRequestContent` for this request.
    assert_eq!(
        acl::signing_content(&command.ext_fields, &command.body),
        b"RocketMQ1000please_rename_unique_group_nameTAG32310241718000000000TagA || TagB150003TopicTest"
    );
}

#[test]
fn body_with_non_ascii_and_binary_bytes_matches_java() {
    let command = signed(send_request(), &credentials());
    assert_eq!(signature(&command), "b/zoI0FxYt7almbfL4sF6/bnRtc=");

    // Java: `AclSigner.calSignature(content, sk, SigningAlgorithm.HmacSHA256, UTF_8)` over the
    // same content (no Java hook signs with SHA-256; see `SignatureAlgorithm`).
    let mut sha256 = send_request();
    acl::sign(&mut sha256, &credentials(), SignatureAlgorithm::HmacSha256);
    assert_eq!(
        signature(&sha256),
        "K8qSBD+EehjTVqUMNO4VRtbF7H8aUK6k7wUJPl4joOk="
    );
    assert!(acl::verify(&sha256, SECRET, SignatureAlgorithm::HmacSha256));
    assert!(!acl::verify(&sha256, SECRET, SignatureAlgorithm::HmacSha1));
}

#[test]
fn security_token_is_sent_and_signed_as_java_does() {
    let command = Command::request_with_fields(
        RequestCode::QUERY_CONSUMER_OFFSET,
        fields(&[("consumerGroup", "g1"), ("topic", "t1"), ("queueId", "0")]),
    );
    let command = signed(command, &credentials().with_security_token("tok-123"));
    assert_eq!(command.ext_fields.get(SECURITY_TOKEN), Some("tok-123"));
    assert_eq!(signature(&command), "MmEsnwiqdCzR/VS8j0zmseHSQ4o=");
}

#[test]
fn keys_are_ordered_by_utf16_code_units_as_java_does() {
    // U+1F600 is the surrogate pair D83D DE00 in UTF-16, below U+FF61; in UTF-8 (F0.. against
    // EF..) it is above. Java's `TreeMap` signs "emoji" before "halfwidth-stop".
    let command = Command::request_with_fields(
        RequestCode::PULL_MESSAGE,
        fields(&[
            ("k\u{FF61}", "halfwidth-stop"),
            ("k\u{1F600}", "emoji"),
            ("kZ", "ascii"),
        ]),
    );
    let command = signed(command, &credentials());
    assert_eq!(signature(&command), "CegaHyncWJ5jZeXnf/zQ99wriHw=");
    assert_eq!(
        acl::signing_content(&command.ext_fields, &command.body),
        b"RocketMQasciiemojihalfwidth-stop"
    );
}

#[test]
fn unique_key_query_flag_follows_the_request_version() {
    // Java 4.9.7's client announces V4_9_7 (407) and its hook signs the flag with the rest.
    let mut current = query_request();
    current.version = 407;
    let current = signed(current, &credentials());
    assert_eq!(signature(&current), "SjWl0eDjfVDDh6CXGMjKwjBUQDI=");
    assert!(acl::verify(&current, SECRET, SignatureAlgorithm::default()));

    // Up to V4_9_3 (399) brokers check the content without the flag (Java:
    // `AclUtils.calSignature` over the fields less `_UNIQUE_KEY_QUERY`), so it is not signed.
    let mut old = query_request();
    old.version = 397;
    let old = signed(old, &credentials());
    assert_eq!(signature(&old), "fjqO74sgLNf45Ofze1Ryj8665Ok=");
    assert_eq!(old.ext_fields.get(UNIQUE_MSG_QUERY_FLAG), Some("true"));
    assert!(acl::verify(&old, SECRET, SignatureAlgorithm::default()));
}

#[test]
fn signing_again_replaces_the_signature() {
    // Java: a request carrying `Signature=stale`, signed twice, ends with this signature both
    // times.
    let mut command = Command::request_with_fields(
        RequestCode::QUERY_CONSUMER_OFFSET,
        fields(&[
            ("consumerGroup", "g1"),
            ("topic", "t1"),
            ("queueId", "0"),
            (SIGNATURE, "stale"),
        ]),
    );
    acl::sign(&mut command, &credentials(), SignatureAlgorithm::default());
    let first = signature(&command).to_owned();
    acl::sign(&mut command, &credentials(), SignatureAlgorithm::default());
    assert_eq!(first, "H1D1BnYodhJr1dCyCSw08o9yyRQ=");
    assert_eq!(signature(&command), first);
    assert_eq!(command.ext_fields.len(), 5);
}

#[test]
fn empty_content_matches_java() {
    // An empty access key, no fields, no body: Java 4.9.7 and 5.3.1 sign the empty content.
    let command = signed(
        Command::request_with_fields(RequestCode::HEART_BEAT, ExtFields::new()),
        &Credentials::new("", SECRET),
    );
    assert_eq!(signature(&command), "beQgVA0KNM4WtCe68fj2DEn3WWU=");
}

#[test]
fn debug_never_shows_the_secret_or_the_token() {
    let secret = "s3cr3t-Vm9K";
    let token = "tok-Qx7Z";
    let with_token = Credentials::new("my-access", secret).with_security_token(token);
    let printed = format!("{with_token:?} {with_token:#?}");
    assert!(printed.contains("my-access"), "{printed}");
    assert!(printed.contains("<redacted>"), "{printed}");
    assert!(!printed.contains(secret), "{printed}");
    assert!(!printed.contains(token), "{printed}");
    assert_eq!(
        format!("{:?}", Credentials::new("my-access", secret)),
        r#"Credentials { access_key: "my-access", secret_key: "<redacted>", security_token: None }"#
    );
    assert_eq!(with_token.secret_key(), secret);
    assert_eq!(with_token.security_token(), Some(token));
    assert_eq!(with_token.clone(), with_token);
}

#[test]
fn verify_accepts_what_sign_made_and_refuses_changes() {
    let command = signed(
        send_request(),
        &credentials().with_security_token("tok-123"),
    );
    assert!(acl::verify(&command, SECRET, SignatureAlgorithm::default()));

    let mut body = command.clone();
    let mut bytes = body.body.to_vec();
    bytes[0] ^= 1;
    body.body = bytes.into();
    assert!(!acl::verify(&body, SECRET, SignatureAlgorithm::default()));

    let mut field = command.clone();
    field.ext_fields.insert("b", "OtherTopic");
    assert!(!acl::verify(&field, SECRET, SignatureAlgorithm::default()));

    let mut added = command.clone();
    added.ext_fields.insert("z", "");
    assert!(
        acl::verify(&added, SECRET, SignatureAlgorithm::default()),
        "an added empty value does not change the content, in Java either"
    );
    added.ext_fields.insert("z", "x");
    assert!(!acl::verify(&added, SECRET, SignatureAlgorithm::default()));

    let mut token = command.clone();
    token.ext_fields.insert(SECURITY_TOKEN, "tok-124");
    assert!(!acl::verify(&token, SECRET, SignatureAlgorithm::default()));

    assert!(!acl::verify(
        &command,
        "12345679",
        SignatureAlgorithm::default()
    ));
    assert!(!acl::verify(&command, "", SignatureAlgorithm::default()));

    let mut unsigned = command.clone();
    unsigned.ext_fields.remove(SIGNATURE);
    assert!(!acl::verify(
        &unsigned,
        SECRET,
        SignatureAlgorithm::default()
    ));

    let mut garbled = command.clone();
    garbled.ext_fields.insert(SIGNATURE, "not base64!");
    assert!(!acl::verify(
        &garbled,
        SECRET,
        SignatureAlgorithm::default()
    ));

    let mut truncated = command.clone();
    let short = signature(&command)[..12].to_owned();
    truncated.ext_fields.insert(SIGNATURE, short);
    assert!(!acl::verify(
        &truncated,
        SECRET,
        SignatureAlgorithm::default()
    ));

    let mut anonymous = command;
    anonymous.ext_fields.remove(ACCESS_KEY);
    assert!(!acl::verify(
        &anonymous,
        SECRET,
        SignatureAlgorithm::default()
    ));
}

#[test]
fn a_signed_command_verifies_after_a_trip_over_the_wire() {
    for encoding in [HeaderEncoding::Json, HeaderEncoding::Binary] {
        let command = signed(send_request(), &credentials());
        let mut wire = BytesMut::new();
        frame::encode(&command, encoding, &mut wire).expect("the command encodes");
        let received = FrameDecoder::default()
            .decode(&mut wire)
            .expect("the frame decodes")
            .expect("one whole frame");
        assert_eq!(signature(&received), "b/zoI0FxYt7almbfL4sF6/bnRtc=");
        assert!(acl::verify(
            &received,
            SECRET,
            SignatureAlgorithm::default()
        ));
    }
}
