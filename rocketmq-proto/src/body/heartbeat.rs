//! [`HeartbeatData`]: the body of `HEART_BEAT` (34), and the subscription types it carries.
//!
//! Java: `HeartbeatData.java`, `ConsumerData.java`, `ProducerData.java`, `SubscriptionData.java`
//! (`remoting/protocol/heartbeat/`), `FilterAPI.java` for building subscriptions
//! (`remoting-protocol.md` §3.2, §7.4).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::{BodyError, decode_json, encode_json, nullable};

/// Java's `String.hashCode()`: `h = 31 * h + c` over the UTF-16 code units, wrapping at 32 bits.
///
/// The broker matches a message's tag by this hash (`codeSet`, and the tags code stored in the
/// consume queue), so it must be Java's exactly: hashing UTF-8 bytes instead, as the Go client
/// does, breaks non-ASCII tags.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

/// Who this client is and what it consumes and produces: sent to every broker node every 30 s.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct HeartbeatData {
    /// The client id (`ip@instance`); note the key is `clientID`.
    #[serde(rename = "clientID", deserialize_with = "nullable")]
    pub client_id: String,
    /// The producer groups of this client.
    #[serde(deserialize_with = "nullable")]
    pub producer_data_set: Vec<ProducerData>,
    /// The consumer groups of this client.
    #[serde(deserialize_with = "nullable")]
    pub consumer_data_set: Vec<ConsumerData>,
    /// 5.x heartbeat V2: 0 asks for V1 semantics (the broker reads every subscription).
    #[serde(deserialize_with = "nullable")]
    pub heartbeat_fingerprint: i32,
    /// 5.x heartbeat V2: subscriptions omitted because unchanged; false with V1.
    #[serde(deserialize_with = "nullable")]
    pub without_sub: bool,
}

impl HeartbeatData {
    /// The Java class name, used in errors.
    pub const NAME: &'static str = "HeartbeatData";

    /// Reads a heartbeat body.
    pub fn decode(body: &[u8]) -> Result<Self, BodyError> {
        decode_json(Self::NAME, body)
    }

    /// Writes the body; `heartbeatFingerprint` and `withoutSub` are always present.
    pub fn encode(&self) -> Vec<u8> {
        encode_json(self)
    }
}

/// A producer group (`ProducerData.java`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ProducerData {
    /// The group; Java clients always register `CLIENT_INNER_PRODUCER` too.
    #[serde(deserialize_with = "nullable")]
    pub group_name: String,
}

/// A consumer group of this client (`ConsumerData.java`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ConsumerData {
    /// The group.
    #[serde(deserialize_with = "nullable")]
    pub group_name: String,
    /// Pull, push or pop.
    #[serde(deserialize_with = "nullable")]
    pub consume_type: ConsumeType,
    /// Clustering or broadcasting.
    #[serde(deserialize_with = "nullable")]
    pub message_model: MessageModel,
    /// Where a queue without a committed offset starts.
    #[serde(deserialize_with = "nullable")]
    pub consume_from_where: ConsumeFromWhere,
    /// One per subscribed topic, including the group's retry topic.
    #[serde(deserialize_with = "nullable")]
    pub subscription_data_set: Vec<SubscriptionData>,
    /// Unit mode (Alibaba-internal); false.
    #[serde(deserialize_with = "nullable")]
    pub unit_mode: bool,
}

java_enum! {
    /// How a consumer gets messages (`ConsumeType.java`).
    #[derive(Default)]
    pub enum ConsumeType {
        /// Pull and lite-pull consumers.
        Actively = "CONSUME_ACTIVELY",
        /// Push consumers (Java's default).
        #[default]
        Passively = "CONSUME_PASSIVELY",
        /// 5.x pop consumers.
        Pop = "CONSUME_POP",
    }
}

java_enum! {
    /// How a group shares messages (`MessageModel.java`).
    #[derive(Default)]
    pub enum MessageModel {
        /// Every member gets every message; offsets are stored by the client.
        Broadcasting = "BROADCASTING",
        /// Members share the queues; offsets are stored by the broker (Java's default).
        #[default]
        Clustering = "CLUSTERING",
    }
}

java_enum! {
    /// Where a queue without a committed offset starts (`ConsumeFromWhere.java`).
    #[derive(Default)]
    pub enum ConsumeFromWhere {
        /// The queue's end (Java's default).
        #[default]
        LastOffset = "CONSUME_FROM_LAST_OFFSET",
        /// Deprecated.
        LastOffsetAndFromMinWhenBootFirst = "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
        /// Deprecated.
        MinOffset = "CONSUME_FROM_MIN_OFFSET",
        /// Deprecated.
        MaxOffset = "CONSUME_FROM_MAX_OFFSET",
        /// The queue's beginning.
        FirstOffset = "CONSUME_FROM_FIRST_OFFSET",
        /// The first message stored at or after the configured timestamp.
        Timestamp = "CONSUME_FROM_TIMESTAMP",
    }
}

java_enum! {
    /// How `subString` is interpreted (`ExpressionType.java`).
    #[derive(Default)]
    pub enum ExpressionType {
        /// `"TagA || TagB"` or `"*"`; what Java assumes when the member is absent.
        #[default]
        Tag = "TAG",
        /// An SQL92 expression over message properties; needs `enablePropertyFilter` on the broker.
        Sql92 = "SQL92",
    }
}

/// One subscription: a topic and its filter (`SubscriptionData.java`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SubscriptionData {
    /// Legacy class filter; false.
    #[serde(deserialize_with = "nullable")]
    pub class_filter_mode: bool,
    /// The topic, fully qualified (namespace included).
    #[serde(deserialize_with = "nullable")]
    pub topic: String,
    /// The expression as given; [`SubscriptionData::SUB_ALL`] for all messages.
    #[serde(deserialize_with = "nullable")]
    pub sub_string: String,
    /// The tags of a TAG expression; empty for all messages and for SQL92.
    #[serde(deserialize_with = "nullable")]
    pub tags_set: BTreeSet<String>,
    /// [`java_string_hash`] of every tag: what the broker matches (may be negative).
    #[serde(deserialize_with = "nullable")]
    pub code_set: BTreeSet<i32>,
    /// Version of the subscription (a millisecond timestamp in Java), bumped on every change.
    #[serde(deserialize_with = "nullable")]
    pub sub_version: i64,
    /// How `sub_string` is interpreted.
    #[serde(deserialize_with = "nullable")]
    pub expression_type: ExpressionType,
}

impl SubscriptionData {
    /// `SubscriptionData.SUB_ALL`: the expression that matches every message.
    pub const SUB_ALL: &'static str = "*";

    /// A TAG subscription built as `FilterAPI.buildSubscriptionData` does: `"*"` or an empty
    /// expression subscribes to everything; otherwise the tags of [`SubscriptionData::tags`] and
    /// their hash codes.
    pub fn new(topic: &str, expression: &str, sub_version: i64) -> Self {
        let tags = Self::tags(expression);
        let sub_string = if tags.is_empty() {
            Self::SUB_ALL.to_owned()
        } else {
            expression.to_owned()
        };
        Self {
            class_filter_mode: false,
            topic: topic.to_owned(),
            sub_string,
            code_set: tags.iter().map(|t| java_string_hash(t)).collect(),
            tags_set: tags,
            sub_version,
            expression_type: ExpressionType::Tag,
        }
    }

    /// An SQL92 subscription (`FilterAPI.build` with type SQL92): no tags, so the client does
    /// not re-filter what the broker sends.
    pub fn sql92(topic: &str, expression: &str, sub_version: i64) -> Self {
        Self {
            class_filter_mode: false,
            topic: topic.to_owned(),
            sub_string: expression.to_owned(),
            tags_set: BTreeSet::new(),
            code_set: BTreeSet::new(),
            sub_version,
            expression_type: ExpressionType::Sql92,
        }
    }

    /// The tags of a TAG expression, as `FilterAPI.buildSubscriptionData` splits it: on `||`,
    /// each part trimmed, empty parts skipped. Empty means "all messages", for `"*"` and for an
    /// expression without tags.
    ///
    /// Unlike Java, the whole expression is trimmed before the `"*"` test: Java would treat
    /// `" * "` as the literal tag `*` and `" "` as a subscription matching nothing.
    pub fn tags(expression: &str) -> BTreeSet<String> {
        let expression = expression.trim();
        if expression == Self::SUB_ALL {
            return BTreeSet::new();
        }
        expression
            .split("||")
            .map(str::trim)
            .filter(|tag| !tag.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// Whether the subscription takes every message of its topic.
    pub fn is_sub_all(&self) -> bool {
        self.sub_string == Self::SUB_ALL
    }

    /// The client-side re-filter of a pulled message by its `TAGS` property
    /// (`PullAPIWrapper.processPullResult`): with tags listed, only a message whose tag is one
    /// of them passes (the broker matched hash codes, which may collide); a message without a
    /// tag then never passes.
    pub fn accepts_tag(&self, tag: Option<&str>) -> bool {
        if self.tags_set.is_empty() || self.class_filter_mode {
            return true;
        }
        tag.is_some_and(|t| self.tags_set.contains(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_matches_java() {
        // Values from `remoting-protocol.md` §7.4, computed by Java's String.hashCode.
        assert_eq!(java_string_hash("TagA"), 2_598_919);
        assert_eq!(java_string_hash("TagB"), 2_598_920);
        assert_eq!(java_string_hash("*"), 42);
        assert_eq!(java_string_hash("标签"), 857_175);
        assert_eq!(java_string_hash(""), 0);
        // Wraps like Java's int arithmetic: "polygenelubricants".hashCode() == Integer.MIN_VALUE.
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
        // A non-BMP character is two UTF-16 units: 31 * 0xD83D + 0xDE00.
        assert_eq!(java_string_hash("\u{1F600}"), 31 * 0xD83D + 0xDE00);
    }

    #[test]
    fn tags_split_like_filter_api() {
        let set = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<BTreeSet<_>>();
        assert_eq!(
            SubscriptionData::tags("TagA || TagB"),
            set(&["TagA", "TagB"])
        );
        assert_eq!(SubscriptionData::tags("TagA||TagA|| ||"), set(&["TagA"]));
        assert_eq!(SubscriptionData::tags("a|b || c"), set(&["a|b", "c"]));
        assert!(SubscriptionData::tags("*").is_empty());
        assert!(SubscriptionData::tags(" * ").is_empty());
        assert!(SubscriptionData::tags("").is_empty());
    }

    #[test]
    fn tag_subscription() {
        let sub = SubscriptionData::new("T", "TagA || TagB", 7);
        assert_eq!(sub.sub_string, "TagA || TagB");
        assert_eq!(sub.code_set, [2_598_919, 2_598_920].into());
        assert!(!sub.is_sub_all());
        assert!(sub.accepts_tag(Some("TagA")));
        assert!(!sub.accepts_tag(Some("TagC")));
        assert!(!sub.accepts_tag(None));
        let all = SubscriptionData::new("T", "", 7);
        assert!(all.is_sub_all());
        assert!(all.accepts_tag(None));
        let sql = SubscriptionData::sql92("T", "a > 1", 7);
        assert_eq!(sql.expression_type, ExpressionType::Sql92);
        assert!(sql.accepts_tag(None));
    }

    #[test]
    fn heartbeat_matches_the_documented_shape() {
        let heartbeat = HeartbeatData {
            client_id: "10.0.0.5@12345#1234567890123".into(),
            producer_data_set: vec![ProducerData {
                group_name: "CLIENT_INNER_PRODUCER".into(),
            }],
            consumer_data_set: vec![ConsumerData {
                group_name: "my_group".into(),
                consume_type: ConsumeType::Passively,
                message_model: MessageModel::Clustering,
                consume_from_where: ConsumeFromWhere::LastOffset,
                subscription_data_set: vec![SubscriptionData::new("T", "TagA || TagB", 1)],
                unit_mode: false,
            }],
            heartbeat_fingerprint: 0,
            without_sub: false,
        };
        let value: serde_json::Value = serde_json::from_slice(&heartbeat.encode()).unwrap();
        assert_eq!(
            value,
            serde_json::json!({
                "clientID": "10.0.0.5@12345#1234567890123",
                "consumerDataSet": [{
                    "groupName": "my_group",
                    "consumeType": "CONSUME_PASSIVELY",
                    "messageModel": "CLUSTERING",
                    "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET",
                    "subscriptionDataSet": [{
                        "classFilterMode": false, "topic": "T", "subString": "TagA || TagB",
                        "tagsSet": ["TagA", "TagB"], "codeSet": [2_598_919, 2_598_920],
                        "subVersion": 1, "expressionType": "TAG"
                    }],
                    "unitMode": false
                }],
                "producerDataSet": [{"groupName": "CLIENT_INNER_PRODUCER"}],
                "heartbeatFingerprint": 0,
                "withoutSub": false
            })
        );
        assert_eq!(
            HeartbeatData::decode(&heartbeat.encode()).unwrap(),
            heartbeat
        );
    }

    #[test]
    fn unknown_enum_name_is_an_error() {
        let e = HeartbeatData::decode(br#"{"consumerDataSet":[{"consumeType":"CONSUME_LATER"}]}"#)
            .unwrap_err();
        assert!(e.to_string().contains("CONSUME_LATER"), "{e}");
    }
}
