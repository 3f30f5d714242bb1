//! `rmq decode`: captured frames in, one JSON object per frame out.
//!
//! A frame's body is decoded as a message batch when `--pull` is given, or automatically when
//! the frame is a `SUCCESS` response whose body begins with a stored-message record (bytes 4..8
//! hold the v1 or v2 magic code). With `--route` a body is decoded as topic route data instead.

use base64::Engine;
use bytes::BytesMut;
use proto::message::{self, DecodeOptions, Message};
use proto::{Command, FrameDecoder, ResponseCode};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// How bodies are interpreted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BodyMode {
    /// Message batch when the body looks like one (see the module docs), else only its length.
    #[default]
    Auto,
    /// Always a message batch.
    Pull,
    /// Always topic route data.
    Route,
}

/// Options of `rmq decode`.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// How bodies are interpreted.
    pub mode: BodyMode,
    /// Check each record's body CRC.
    pub verify_crc: bool,
}

/// The first thing that failed, with its byte offset in the input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeFailure {
    /// What went wrong.
    pub error: String,
    /// Where, in bytes from the start of the input.
    pub offset: usize,
}

impl DecodeFailure {
    /// The `{"error": .., "offset": ..}` line.
    pub fn to_json(&self) -> Value {
        json!({ "error": self.error, "offset": self.offset })
    }
}

/// Decodes every frame of `input`, calling `emit` with one JSON object per frame, in order.
/// Stops at the first bad frame or record, after emitting everything decoded before it.
pub fn decode_stream(
    input: &[u8],
    options: Options,
    mut emit: impl FnMut(Value),
) -> Result<usize, DecodeFailure> {
    let mut buf = BytesMut::from(input);
    let mut decoder = FrameDecoder::default();
    let mut frames = 0;
    loop {
        let offset = input.len() - buf.len();
        if buf.is_empty() {
            return Ok(frames);
        }
        let command = match decoder.decode(&mut buf) {
            Ok(Some(command)) => command,
            Ok(None) => {
                return Err(DecodeFailure {
                    error: format!("truncated frame: only {} bytes left", buf.len()),
                    offset,
                });
            }
            Err(e) => {
                return Err(DecodeFailure {
                    error: e.to_string(),
                    offset,
                });
            }
        };
        frames += 1;
        let frame_end = input.len() - buf.len();
        let body_start = frame_end - command.body.len();
        let (object, failure) = frame_json(&command, options, body_start);
        emit(object);
        if let Some(failure) = failure {
            return Err(failure);
        }
    }
}

fn frame_json(
    command: &Command,
    options: Options,
    body_start: usize,
) -> (Value, Option<DecodeFailure>) {
    let mut object = Map::new();
    object.insert("code".into(), json!(command.code));
    object.insert("opaque".into(), json!(command.opaque));
    object.insert("flag".into(), json!(command.flag));
    object.insert(
        "language".into(),
        match command.language.name() {
            Some(name) => json!(name),
            None => json!(command.language.0),
        },
    );
    object.insert("version".into(), json!(command.version));
    if let Some(remark) = &command.remark {
        object.insert("remark".into(), json!(remark));
    }
    let ext: Map<String, Value> = command
        .ext_fields
        .iter()
        .map(|(k, v)| (k.to_owned(), json!(v)))
        .collect();
    object.insert("ext_fields".into(), Value::Object(ext));
    object.insert("body_len".into(), json!(command.body.len()));

    let mut failure = None;
    let as_pull = match options.mode {
        BodyMode::Pull => true,
        BodyMode::Route => false,
        BodyMode::Auto => looks_like_pull(command),
    };
    if as_pull {
        let decoded = message::decode_messages(
            &command.body,
            &DecodeOptions {
                verify_crc: options.verify_crc,
                ..DecodeOptions::default()
            },
        );
        let messages: Vec<Value> = decoded.messages.iter().map(message_json).collect();
        object.insert("messages".into(), Value::Array(messages));
        if let Some(e) = decoded.error {
            failure = Some(DecodeFailure {
                error: e.to_string(),
                offset: body_start + e.position,
            });
        }
    } else if options.mode == BodyMode::Route && !command.body.is_empty() {
        match proto::body::TopicRouteData::decode(&command.body) {
            Ok(route) => {
                let value = serde_json::to_value(&route)
                    .expect("route data serializes: it holds only strings, numbers and maps");
                object.insert("route".into(), value);
            }
            Err(e) => {
                failure = Some(DecodeFailure {
                    error: e.to_string(),
                    offset: body_start,
                })
            }
        }
    }
    (Value::Object(object), failure)
}

/// A successful response whose body starts with a stored-message magic code.
fn looks_like_pull(command: &Command) -> bool {
    if !command.is_response() || command.response_code() != ResponseCode::SUCCESS {
        return false;
    }
    let Some(magic) = command.body.get(4..8) else {
        return false;
    };
    matches!(
        u32::from_be_bytes([magic[0], magic[1], magic[2], magic[3]]),
        0xDAA3_20A7 | 0xDAA3_20AB
    )
}

/// One message as a JSON object (the fields of `rmq decode`, in a stable order).
pub fn message_json(msg: &Message) -> Value {
    let mut object = Map::new();
    object.insert("topic".into(), json!(msg.topic()));
    object.insert("queue_id".into(), json!(msg.queue_id()));
    object.insert("queue_offset".into(), json!(msg.queue_offset()));
    object.insert("commit_log_offset".into(), json!(msg.commit_log_offset()));
    object.insert("sys_flag".into(), json!(msg.sys_flag()));
    object.insert("flag".into(), json!(msg.flag()));
    object.insert("born_timestamp".into(), json!(msg.born_timestamp()));
    object.insert("born_host".into(), json!(msg.born_host().to_string()));
    object.insert("store_host".into(), json!(msg.store_host().to_string()));
    object.insert("store_timestamp".into(), json!(msg.store_timestamp()));
    object.insert("reconsume_times".into(), json!(msg.reconsume_times()));
    object.insert("body_crc".into(), json!(msg.body_crc()));
    object.insert("msg_id".into(), json!(msg.msg_id()));
    object.insert("offset_msg_id".into(), json!(msg.offset_msg_id()));
    object.insert("tags".into(), json!(msg.tags()));
    object.insert("keys".into(), json!(msg.property(message::property::KEYS)));
    let properties: Map<String, Value> = msg
        .properties()
        .map(|(k, v)| (k.to_owned(), json!(v)))
        .collect();
    object.insert("properties".into(), Value::Object(properties));
    insert_body(&mut object, msg.body());
    Value::Object(object)
}

fn insert_body(object: &mut Map<String, Value>, body: &[u8]) {
    object.insert("body_len".into(), json!(body.len()));
    object.insert(
        "body_sha256".into(),
        json!(hex::encode(Sha256::digest(body))),
    );
    match std::str::from_utf8(body) {
        Ok(text) => object.insert("body".into(), json!(text)),
        Err(_) => object.insert(
            "body_base64".into(),
            json!(base64::engine::general_purpose::STANDARD.encode(body)),
        ),
    };
}
