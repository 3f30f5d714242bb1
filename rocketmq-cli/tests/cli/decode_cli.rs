//! `rmq decode` on real captures prints one JSON object per frame with the documented fields,
//! recognises pull responses by themselves, and on bad input prints what it decoded, then
//! `{"error", "offset"}`, and exits 1.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../rocketmq-proto/tests/data");

fn rmq(args: &[&str], stdin: &[u8]) -> (i32, Vec<Value>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rmq"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rmq runs");
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(stdin)
        .expect("stdin accepted");
    let out = child.wait_with_output().expect("rmq finishes");
    let lines = String::from_utf8(out.stdout)
        .expect("UTF-8 output")
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line is JSON"))
        .collect();
    (
        out.status.code().expect("exit code"),
        lines,
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn pull_capture_decodes_with_messages() {
    let (code, frames, _) = rmq(&["decode", &format!("{DATA}/pull-found-32x1k.bin")], b"");
    assert_eq!(code, 0);
    assert_eq!(frames.len(), 1);
    let frame = &frames[0];
    assert_eq!(frame["code"], 0);
    assert_eq!(frame["flag"], 1);
    assert_eq!(frame["language"], "RUST");
    let messages = frame["messages"]
        .as_array()
        .expect("auto-detected as a pull response");
    assert_eq!(messages.len(), 32);
    let first = &messages[0];
    assert_eq!(first["topic"], "perf5");
    assert_eq!(first["queue_id"], 3);
    assert_eq!(first["queue_offset"], 100);
    assert_eq!(first["store_host"], "127.0.0.1:20911");
    assert_eq!(first["body_len"], 1024);
    assert_eq!(first["offset_msg_id"].as_str().map(str::len), Some(32));
    for key in [
        "commit_log_offset",
        "sys_flag",
        "born_timestamp",
        "born_host",
        "store_timestamp",
        "reconsume_times",
        "body_crc",
        "msg_id",
        "tags",
        "keys",
        "properties",
        "body_sha256",
        "body",
    ] {
        assert!(first.get(key).is_some(), "missing {key}: {first}");
    }
}

#[test]
fn zlib_body_is_printed_decompressed() {
    let (code, frames, _) = rmq(
        &["decode"],
        &std::fs::read(format!("{DATA}/pull-found-zlib.bin")).expect("capture"),
    );
    assert_eq!(code, 0);
    let messages = frames[0]["messages"].as_array().expect("messages");
    assert_eq!(messages[0]["body"], "hello from python");
    assert_eq!(messages[1]["body_len"], 5500);
    assert!(
        messages[1]["body"]
            .as_str()
            .expect("text")
            .starts_with("compressed compressed")
    );
}

#[test]
fn route_mode_prints_route_data() {
    let (code, frames, _) = rmq(
        &[
            "decode",
            "--route",
            &format!("{DATA}/route-standard-json.bin"),
        ],
        b"",
    );
    assert_eq!(code, 0);
    let route = &frames[0]["route"];
    assert_eq!(route["brokerDatas"][0]["brokerName"], "broker-a");
    assert_eq!(route["queueDatas"][0]["readQueueNums"], 8);
}

#[test]
fn bad_record_reports_its_offset_after_the_good_ones() {
    let mut capture = std::fs::read(format!("{DATA}/pull-found-32x1k.bin")).expect("capture");
    let header_len =
        u32::from_be_bytes(capture[4..8].try_into().expect("4 bytes")) as usize & 0xFF_FFFF;
    let body_start = 8 + header_len;
    let third_record = body_start + 2 * 1244;
    capture[third_record + 4] ^= 0xFF; // break the magic code of the third record
    let (code, lines, stderr) = rmq(&["decode"], &capture);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(lines.len(), 2);
    assert_eq!(
        lines[0]["messages"].as_array().map(Vec::len),
        Some(2),
        "good records first"
    );
    assert_eq!(lines[1]["offset"], third_record);
    assert!(
        lines[1]["error"]
            .as_str()
            .expect("error text")
            .contains("magic"),
        "{}",
        lines[1]
    );
}

#[test]
fn truncated_frame_is_an_error_with_its_offset() {
    let mut capture =
        std::fs::read(format!("{DATA}/heartbeat-stream-with-notify.bin")).expect("capture");
    let first_len = u32::from_be_bytes(capture[0..4].try_into().expect("4 bytes")) as usize + 4;
    capture.truncate(first_len + 10);
    let (code, lines, _) = rmq(&["decode"], &capture);
    assert_eq!(code, 1);
    assert_eq!(lines.len(), 2, "the whole first frame, then the error");
    assert_eq!(lines[0]["code"], 40);
    assert_eq!(lines[1]["offset"], first_len);
}

#[test]
fn crc_mismatch_is_reported_unless_disabled() {
    let mut capture = std::fs::read(format!("{DATA}/pull-found-32x1k.bin")).expect("capture");
    let last = capture.len() - 1;
    capture[last] ^= 0x01; // last byte of the last record's properties: the CRC covers the body only
    let header_len =
        u32::from_be_bytes(capture[4..8].try_into().expect("4 bytes")) as usize & 0xFF_FFFF;
    let body_start = 8 + header_len;
    capture[body_start + 200] ^= 0x01; // inside the first record's body
    let (code, lines, _) = rmq(&["decode"], &capture);
    assert_eq!(code, 1);
    assert!(
        lines[1]["error"]
            .as_str()
            .expect("error")
            .to_lowercase()
            .contains("crc"),
        "{}",
        lines[1]
    );
    assert_eq!(lines[1]["offset"], body_start);
    let (code, _, _) = rmq(&["decode", "--no-verify-crc"], &capture);
    assert_eq!(code, 0);
}
