//! The codec from outside: golden captures (`data/`), round trips, malformed input and property
//! tests of frames, headers, stored messages and JSON bodies, one group per module, all in one
//! test binary.

#[path = "codec/body_fastjson.rs"]
mod body_fastjson;
#[path = "codec/body_golden.rs"]
mod body_golden;
#[path = "codec/body_roundtrip.rs"]
mod body_roundtrip;
#[path = "codec/frame_golden.rs"]
mod frame_golden;
#[path = "codec/frame_malformed.rs"]
mod frame_malformed;
#[path = "codec/frame_roundtrip.rs"]
mod frame_roundtrip;
#[path = "codec/headers_roundtrip.rs"]
mod headers_roundtrip;
#[path = "codec/json_malformed.rs"]
mod json_malformed;
#[path = "codec/json_proptest.rs"]
mod json_proptest;
#[path = "codec/message_golden.rs"]
mod message_golden;
#[path = "codec/message_malformed.rs"]
mod message_malformed;
#[path = "codec/message_roundtrip.rs"]
mod message_roundtrip;
