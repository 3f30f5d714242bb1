//! Message trace records in Java's encoding (`org.apache.rocketmq.client.trace`:
//! `TraceDataEncoder`, `TraceContext`, `TraceBean`, `TraceConstants`), so Java's dashboard and
//! `mqadmin queryMsgTraceById` read what our clients write, and we read theirs.
//!
//! A trace message's body is records one after the other, each its fields joined by
//! [`CONTENT_SEPARATOR`] (U+0001) and ended by [`FIELD_SEPARATOR`] (U+0002); the first field
//! names the record type. Its keys ([`TraceRecord::keys`]) are the traced message's id and
//! business keys, so the broker's index finds the records by message id. They are sent to
//! [`DEFAULT_TRACE_TOPIC`] (or a topic of the application's choosing).

/// The topic traces go to by default (`TopicValidator.RMQ_SYS_TRACE_TOPIC`); a broker creates
/// it with `traceTopicEnable=true`.
pub const DEFAULT_TRACE_TOPIC: &str = "RMQ_SYS_TRACE_TOPIC";
/// Between the fields of a record (`TraceConstants.CONTENT_SPLITOR`).
pub const CONTENT_SEPARATOR: char = '\u{1}';
/// After each record (`TraceConstants.FIELD_SPLITOR`).
pub const FIELD_SEPARATOR: char = '\u{2}';
/// The producer group Java's trace dispatcher sends with, before the traced group's name
/// (`TraceConstants.GROUP_NAME_PREFIX`).
pub const TRACE_PRODUCER_GROUP_PREFIX: &str = "_INNER_TRACE_PRODUCER-";

/// How Java writes an absent text field.
const NULL: &str = "null";

/// One trace record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceRecord {
    /// A message was sent (Java's `TraceType.Pub`).
    Pub(PubTrace),
    /// A message is about to reach a consumer's handler (`TraceType.SubBefore`).
    SubBefore(SubBeforeTrace),
    /// The handler finished with it (`TraceType.SubAfter`).
    SubAfter(SubAfterTrace),
}

/// A sent message.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct PubTrace<S = String> {
    /// When it was sent, ms since the Unix epoch.
    pub timestamp: i64,
    /// The region (`MSG_REGION`; Java writes `DefaultRegion` when the broker names none).
    pub region: S,
    /// The producer group.
    pub group: S,
    /// The message's topic.
    pub topic: S,
    /// Its id (`UNIQ_KEY`).
    pub msg_id: S,
    /// Its tags (empty: none).
    pub tags: S,
    /// Its business keys, space separated (empty: none).
    pub keys: S,
    /// The broker that stored it, `host:port`.
    pub store_host: S,
    /// Its body's length.
    pub body_length: i32,
    /// How long the send took, ms.
    pub cost_ms: i32,
    /// Java's `MessageType` ordinal: 0 normal, 1 transactional half, 2 transactional commit, 3
    /// delayed, 4 ordered.
    pub message_type: i32,
    /// The broker's offset message id.
    pub offset_msg_id: S,
    /// Whether it was stored.
    pub success: bool,
}

/// A message about to be handled.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct SubBeforeTrace<S = String> {
    /// When the delivery started, ms since the Unix epoch.
    pub timestamp: i64,
    /// The region (`MSG_REGION` of the message).
    pub region: S,
    /// The consumer group.
    pub group: S,
    /// Ties this record to its [`SubAfterTrace`] (one id per delivery).
    pub request_id: S,
    /// The message's id (`UNIQ_KEY`, else its offset id).
    pub msg_id: S,
    /// Its reconsume count.
    pub retry_times: i32,
    /// Its business keys (empty: none).
    pub keys: S,
}

/// A message handled.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct SubAfterTrace<S = String> {
    /// The [`SubBeforeTrace::request_id`] of the same delivery.
    pub request_id: S,
    /// The message's id.
    pub msg_id: S,
    /// The delivery's time divided among its messages, ms (as Java's hook computes it).
    pub cost_ms: i32,
    /// Whether the handler consumed it.
    pub success: bool,
    /// Its business keys (empty: none).
    pub keys: S,
    /// Java's `ConsumeReturnType` ordinal: 0 success, 1 time out, 2 exception, 3 returned
    /// null, 4 failed.
    pub context_code: i32,
    /// When the handler finished, ms since the Unix epoch.
    pub timestamp: i64,
}

impl<S: AsRef<str>> PubTrace<S> {
    /// Appends this record in Java's encoding (see [`TraceRecord::encode_into`]).
    pub fn encode_into(&self, out: &mut String) {
        let mut fields = Fields(out);
        fields.text("Pub");
        fields.num(self.timestamp);
        fields.text(self.region.as_ref());
        fields.text(self.group.as_ref());
        fields.text(self.topic.as_ref());
        fields.text(self.msg_id.as_ref());
        fields.text(self.tags.as_ref());
        fields.text(self.keys.as_ref());
        fields.text(self.store_host.as_ref());
        fields.num(self.body_length);
        fields.num(self.cost_ms);
        fields.num(self.message_type);
        fields.text(self.offset_msg_id.as_ref());
        fields.flag(self.success);
        fields.end();
    }
}

impl<S: AsRef<str>> SubBeforeTrace<S> {
    /// Appends this record in Java's encoding (see [`TraceRecord::encode_into`]).
    pub fn encode_into(&self, out: &mut String) {
        let mut fields = Fields(out);
        fields.text("SubBefore");
        fields.num(self.timestamp);
        fields.text(self.region.as_ref());
        fields.text(self.group.as_ref());
        fields.text(self.request_id.as_ref());
        fields.text(self.msg_id.as_ref());
        fields.num(self.retry_times);
        fields.text(self.keys.as_ref());
        fields.end();
    }
}

impl<S: AsRef<str>> SubAfterTrace<S> {
    /// Appends this record in Java's encoding (see [`TraceRecord::encode_into`]).
    pub fn encode_into(&self, out: &mut String) {
        let mut fields = Fields(out);
        fields.text("SubAfter");
        fields.text(self.request_id.as_ref());
        fields.text(self.msg_id.as_ref());
        fields.num(self.cost_ms);
        fields.flag(self.success);
        fields.text(self.keys.as_ref());
        fields.num(self.context_code);
        fields.num(self.timestamp);
        fields.end();
    }
}

/// Records already encoded, with the keys of the trace message that will carry them: what a
/// consumer hands its driver per delivery, cheaper than records one by one (the fields are
/// written where they lie, with no copy of their own).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceBatch {
    /// The records, in Java's encoding.
    pub data: String,
    /// Their message ids and business keys, space separated (repeats allowed).
    pub keys: String,
    /// How many records `data` holds.
    pub records: usize,
}

impl TraceBatch {
    /// An empty batch with room for about `records` records.
    pub fn with_capacity(records: usize) -> Self {
        Self {
            data: String::with_capacity(records * 192),
            keys: String::with_capacity(records * 48),
            records: 0,
        }
    }

    /// Adds a record that `encode` writes, for the message `msg_id` with business `keys`.
    pub fn push_with(&mut self, msg_id: &str, keys: &str, encode: impl FnOnce(&mut String)) {
        encode(&mut self.data);
        self.records += 1;
        for key in std::iter::once(msg_id).chain((!keys.is_empty()).then_some(keys)) {
            if !self.keys.is_empty() {
                self.keys.push(' ');
            }
            self.keys.push_str(key);
        }
    }

    /// Adds `record`.
    pub fn push(&mut self, record: &TraceRecord) {
        let (id, keys) = match record {
            TraceRecord::Pub(p) => (&p.msg_id, &p.keys),
            TraceRecord::SubBefore(b) => (&b.msg_id, &b.keys),
            TraceRecord::SubAfter(a) => (&a.msg_id, &a.keys),
        };
        self.push_with(id, keys, |out| record.encode_into(out));
    }

    /// Adds every record of `other`.
    pub fn append(&mut self, other: &Self) {
        self.data.push_str(&other.data);
        if !other.keys.is_empty() {
            if !self.keys.is_empty() {
                self.keys.push(' ');
            }
            self.keys.push_str(&other.keys);
        }
        self.records += other.records;
    }
}

impl TraceRecord {
    /// Appends this record in Java's encoding (`TraceDataEncoder.encoderFromContextBean`).
    /// The separators inside a field would break the record, so they are left out of it.
    pub fn encode_into(&self, out: &mut String) {
        match self {
            Self::Pub(p) => p.encode_into(out),
            Self::SubBefore(b) => b.encode_into(out),
            Self::SubAfter(a) => a.encode_into(out),
        }
    }

    /// The keys the trace message carries for this record: the message id, and its business
    /// keys when it has any (`TraceTransferBean.transKey`).
    pub fn keys(&self) -> impl Iterator<Item = &str> + '_ {
        let (id, keys) = match self {
            Self::Pub(p) => (&p.msg_id, &p.keys),
            Self::SubBefore(b) => (&b.msg_id, &b.keys),
            Self::SubAfter(a) => (&a.msg_id, &a.keys),
        };
        std::iter::once(id.as_str()).chain((!keys.is_empty()).then_some(keys.as_str()))
    }

    /// The records of a trace message's body, as Java's `decoderFromTraceDataString` reads
    /// them (older, shorter forms included). Records of other types (`EndTransaction`) are
    /// skipped; a record too short for its type, or with a number that does not parse, is an
    /// error naming it.
    pub fn decode_all(data: &str) -> Result<Vec<Self>, TraceError> {
        let mut records = Vec::new();
        for (index, record) in data.split(FIELD_SEPARATOR).enumerate() {
            if record.is_empty() {
                continue;
            }
            let fields: Vec<&str> = record.split(CONTENT_SEPARATOR).collect();
            let at = Fieldset {
                fields: &fields,
                index,
            };
            let decoded = match fields.first().copied().unwrap_or_default() {
                "Pub" => Self::Pub(PubTrace {
                    timestamp: at.num(1)?,
                    region: at.text(2)?,
                    group: at.text(3)?,
                    topic: at.text(4)?,
                    msg_id: at.text(5)?,
                    tags: at.text(6)?,
                    keys: at.text(7)?,
                    store_host: at.text(8)?,
                    body_length: at.num(9)?,
                    cost_ms: at.num(10)?,
                    message_type: at.num(11)?,
                    // 13 fields: no offset id; 14 and more: with it.
                    offset_msg_id: if fields.len() >= 14 {
                        at.text(12)?
                    } else {
                        String::new()
                    },
                    success: at.flag(if fields.len() >= 14 { 13 } else { 12 })?,
                }),
                "SubBefore" => Self::SubBefore(SubBeforeTrace {
                    timestamp: at.num(1)?,
                    region: at.text(2)?,
                    group: at.text(3)?,
                    request_id: at.text(4)?,
                    msg_id: at.text(5)?,
                    retry_times: at.num(6)?,
                    keys: at.text(7)?,
                }),
                "SubAfter" => Self::SubAfter(SubAfterTrace {
                    request_id: at.text(1)?,
                    msg_id: at.text(2)?,
                    cost_ms: at.num(3)?,
                    success: at.flag(4)?,
                    keys: at.text(5)?,
                    context_code: at.num_or_zero(6)?,
                    timestamp: at.num_or_zero(7)?,
                }),
                _ => continue,
            };
            records.push(decoded);
        }
        Ok(records)
    }
}

/// A trace record that does not decode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("trace record {index}: {what}")]
pub struct TraceError {
    /// Which record of the body (0-based).
    pub index: usize,
    /// What is wrong.
    pub what: String,
}

/// Writes one record's fields.
struct Fields<'a>(&'a mut String);

impl Fields<'_> {
    /// A text field; an empty one is written `null`, as Java's `StringBuilder.append` writes
    /// an absent value. That matters: Java's decoder splits with `String.split`, which drops
    /// trailing empty fields, so a record ending in an empty field would be cut short and fail
    /// to decode there.
    fn text(&mut self, value: &str) {
        if value.is_empty() {
            self.0.push_str(NULL);
        } else if value.bytes().any(|b| b == 1 || b == 2) {
            // Both separators are ASCII, so a byte test finds them; rare, so filter only then.
            self.0.extend(
                value
                    .chars()
                    .filter(|c| *c != CONTENT_SEPARATOR && *c != FIELD_SEPARATOR),
            );
        } else {
            self.0.push_str(value);
        }
        self.0.push(CONTENT_SEPARATOR);
    }

    /// A number, in decimal as Java's `StringBuilder.append(long)` writes it (by hand, with
    /// the header fields' writer: this runs for several fields of every traced message, and
    /// `fmt` costs more than the rest).
    fn num(&mut self, value: impl Into<i64>) {
        self.0
            .push_str(crate::ExtString::integer(value.into()).as_str());
        self.0.push(CONTENT_SEPARATOR);
    }

    /// A boolean, as Java writes it.
    fn flag(&mut self, value: bool) {
        self.text(if value { "true" } else { "false" });
    }

    /// Ends the record: drops the separator after its last field for the record's end.
    fn end(&mut self) {
        self.0.pop();
        self.0.push(FIELD_SEPARATOR);
    }
}

/// Reads one record's fields.
struct Fieldset<'a> {
    fields: &'a [&'a str],
    index: usize,
}

impl Fieldset<'_> {
    fn get(&self, i: usize) -> Result<&str, TraceError> {
        self.fields.get(i).copied().ok_or_else(|| TraceError {
            index: self.index,
            what: format!("{} fields, field {i} missing", self.fields.len()),
        })
    }

    /// A text field: Java's `null` (an absent value) reads as empty.
    fn text(&self, i: usize) -> Result<String, TraceError> {
        self.get(i)
            .map(|field| if field == NULL { "" } else { field }.to_owned())
    }

    fn num<T: std::str::FromStr>(&self, i: usize) -> Result<T, TraceError> {
        let field = self.get(i)?;
        field.parse().map_err(|_| TraceError {
            index: self.index,
            what: format!("field {i} is not a number: {field:?}"),
        })
    }

    /// A number Java's older encoders did not write: zero when absent.
    fn num_or_zero<T: std::str::FromStr + Default>(&self, i: usize) -> Result<T, TraceError> {
        if i >= self.fields.len() {
            return Ok(T::default());
        }
        self.num(i)
    }

    /// Java's `Boolean.parseBoolean`: `true` in any case is true, anything else false.
    fn flag(&self, i: usize) -> Result<bool, TraceError> {
        Ok(self.get(i)?.eq_ignore_ascii_case("true"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn before() -> TraceRecord {
        TraceRecord::SubBefore(SubBeforeTrace {
            timestamp: 1_700_000_000_123,
            region: "DefaultRegion".into(),
            group: "g1".into(),
            request_id: "7F00000100002A9F0000000000000001".into(),
            msg_id: "7F000001000018B4AAC2000000000000".into(),
            retry_times: 2,
            keys: "k1 k2".into(),
        })
    }

    fn after() -> TraceRecord {
        TraceRecord::SubAfter(SubAfterTrace {
            request_id: "7F00000100002A9F0000000000000001".into(),
            msg_id: "7F000001000018B4AAC2000000000000".into(),
            cost_ms: 12,
            success: false,
            keys: String::new(),
            context_code: 4,
            timestamp: 1_700_000_000_135,
        })
    }

    /// The fields in Java's order, as `encoderFromContextBean` appends them.
    #[test]
    fn encodes_as_java_does() {
        let mut out = String::new();
        before().encode_into(&mut out);
        after().encode_into(&mut out);
        assert_eq!(
            out,
            "SubBefore\u{1}1700000000123\u{1}DefaultRegion\u{1}g1\u{1}7F00000100002A9F0000000000000001\u{1}7F000001000018B4AAC2000000000000\u{1}2\u{1}k1 k2\u{2}\
             SubAfter\u{1}7F00000100002A9F0000000000000001\u{1}7F000001000018B4AAC2000000000000\u{1}12\u{1}false\u{1}null\u{1}4\u{1}1700000000135\u{2}"
        );
        assert_eq!(TraceRecord::decode_all(&out), Ok(vec![before(), after()]));
        assert_eq!(
            before().keys().collect::<Vec<_>>(),
            ["7F000001000018B4AAC2000000000000", "k1 k2"]
        );
        assert_eq!(after().keys().count(), 1, "no business keys, only the id");
    }

    #[test]
    fn a_pub_record_round_trips_and_older_forms_decode() {
        let record = TraceRecord::Pub(PubTrace {
            timestamp: 1,
            region: "DefaultRegion".into(),
            group: "p".into(),
            topic: "T".into(),
            msg_id: "ID".into(),
            tags: "TagA".into(),
            keys: String::new(),
            store_host: "127.0.0.1:10911".into(),
            body_length: 5,
            cost_ms: 3,
            message_type: 0,
            offset_msg_id: "OFF".into(),
            success: true,
        });
        let mut out = String::new();
        record.encode_into(&mut out);
        assert_eq!(TraceRecord::decode_all(&out), Ok(vec![record]));
        // 4.x before the offset id: 13 fields.
        let old =
            "Pub\u{1}1\u{1}r\u{1}p\u{1}T\u{1}ID\u{1}\u{1}\u{1}h:1\u{1}5\u{1}3\u{1}0\u{1}true\u{2}";
        let Ok(decoded) = TraceRecord::decode_all(old) else {
            panic!("the 13-field form decodes");
        };
        assert!(
            matches!(&decoded[..], [TraceRecord::Pub(p)] if p.success && p.offset_msg_id.is_empty())
        );
        // SubAfter before the context code and time: 6 fields.
        let old = "SubAfter\u{1}r\u{1}id\u{1}7\u{1}TRUE\u{1}\u{2}";
        let Ok(decoded) = TraceRecord::decode_all(old) else {
            panic!("the 6-field form decodes");
        };
        assert!(
            matches!(&decoded[..], [TraceRecord::SubAfter(a)] if a.success && a.timestamp == 0)
        );
    }

    #[test]
    fn separators_in_fields_are_dropped_and_garbage_is_an_error() {
        let mut record = before();
        if let TraceRecord::SubBefore(b) = &mut record {
            b.keys = "a\u{1}b\u{2}c".into();
        }
        let mut out = String::new();
        record.encode_into(&mut out);
        let Ok(decoded) = TraceRecord::decode_all(&out) else {
            panic!("still one well-formed record");
        };
        assert!(matches!(&decoded[..], [TraceRecord::SubBefore(b)] if b.keys == "abc"));

        // No keys: `null`, so Java's `String.split` still sees all 8 fields.
        let mut out = String::new();
        TraceRecord::SubAfter(SubAfterTrace {
            cost_ms: i32::MIN,
            timestamp: i64::MAX,
            ..SubAfterTrace::default()
        })
        .encode_into(&mut out);
        assert!(
            out.contains("\u{1}-2147483648\u{1}") && out.ends_with("\u{1}9223372036854775807\u{2}"),
            "{out:?}"
        );
        let mut out = String::new();
        TraceRecord::SubBefore(SubBeforeTrace::default()).encode_into(&mut out);
        assert!(out.ends_with("\u{1}null\u{2}"), "{out:?}");
        assert_eq!(out.split(CONTENT_SEPARATOR).count(), 8);

        let short = TraceRecord::decode_all("SubBefore\u{1}1\u{2}");
        assert!(short.is_err_and(|e| e.index == 0 && e.what.contains("missing")));
        let bad =
            TraceRecord::decode_all("x\u{2}SubAfter\u{1}r\u{1}id\u{1}seven\u{1}true\u{1}\u{2}");
        assert!(bad.is_err_and(|e| e.index == 1 && e.what.contains("seven")));
        assert_eq!(TraceRecord::decode_all(""), Ok(vec![]));
        assert_eq!(
            TraceRecord::decode_all("EndTransaction\u{1}whatever\u{2}"),
            Ok(vec![])
        );
    }
}
