//! Property names (`MessageConst.java`) and the separators of the property string.
//!
//! Names marked "client-local" never travel: Java's consumer sets them on its own copy.

/// The tag, the unit of broker-side tag filtering.
pub const TAGS: &str = "TAGS";
/// Business keys, separated by [`KEY_SEPARATOR`].
pub const KEYS: &str = "KEYS";
/// The producer-assigned message id, kept across retries (`MessageClientIDSetter`).
pub const UNIQ_KEY: &str = "UNIQ_KEY";
/// `"true"`/`"false"`: whether the producer waits for the store to succeed; default true.
pub const WAIT: &str = "WAIT";
/// The delay level (decimal). The broker removes it when the delayed message is due.
pub const DELAY: &str = "DELAY";
/// The original topic of a delayed or retried message, left in place after delivery.
pub const REAL_TOPIC: &str = "REAL_TOPIC";
/// The original queue id of a delayed or retried message.
pub const REAL_QID: &str = "REAL_QID";
/// The topic a `%RETRY%<group>` delivery came from; the consumer restores it.
pub const RETRY_TOPIC: &str = "RETRY_TOPIC";
/// The id of the first delivery, kept across retries.
pub const ORIGIN_MESSAGE_ID: &str = "ORIGIN_MESSAGE_ID";
/// Reconsume count on the "send back as a normal message" path; moved into the send header.
pub const RECONSUME_TIME: &str = "RECONSUME_TIME";
/// Maximum reconsume count on the same path; moved into the send header.
pub const MAX_RECONSUME_TIMES: &str = "MAX_RECONSUME_TIMES";
/// Client-local: ms timestamp set just before the listener runs (consume timeout).
pub const CONSUME_START_TIME: &str = "CONSUME_START_TIME";
/// Client-local: the queue's minimum offset from the pull response header.
pub const MIN_OFFSET: &str = "MIN_OFFSET";
/// Client-local: the queue's maximum offset from the pull response header.
pub const MAX_OFFSET: &str = "MAX_OFFSET";
/// `"true"` on a transactional half message.
pub const TRAN_MSG: &str = "TRAN_MSG";
/// The producer group (transactions).
pub const PGROUP: &str = "PGROUP";
/// The storing broker's cluster name, added by the broker.
pub const CLUSTER: &str = "CLUSTER";
/// Transactions: the half message's queue offset.
pub const TRAN_PREPARED_QUEUE_OFFSET: &str = "TRAN_PREPARED_QUEUE_OFFSET";
/// Transactions: the transaction id.
pub const TRANSACTION_ID: &str = "__transactionId__";
/// Transactions: how many times the broker checked the state.
pub const TRANSACTION_CHECK_TIMES: &str = "TRANSACTION_CHECK_TIMES";
/// Transactions: seconds before the first state check.
pub const CHECK_IMMUNITY_TIME_IN_SECONDS: &str = "CHECK_IMMUNITY_TIME_IN_SECONDS";
/// The producer's namespace.
pub const INSTANCE_ID: &str = "INSTANCE_ID";
/// The broker's region.
pub const MSG_REGION: &str = "MSG_REGION";
/// Whether message tracing is on at the broker.
pub const TRACE_ON: &str = "TRACE_ON";
/// Request/reply: the correlation id.
pub const CORRELATION_ID: &str = "CORRELATION_ID";
/// Request/reply: the client to answer.
pub const REPLY_TO_CLIENT: &str = "REPLY_TO_CLIENT";
/// Request/reply: time to live.
pub const TTL: &str = "TTL";
/// Request/reply: arrival time.
pub const ARRIVE_TIME: &str = "ARRIVE_TIME";
/// Request/reply: message type.
pub const MSG_TYPE: &str = "MSG_TYPE";
/// Request/reply: push-reply time.
pub const PUSH_REPLY_TIME: &str = "PUSH_REPLY_TIME";
/// 5.x timer messages: delivery time in ms.
pub const TIMER_DELIVER_MS: &str = "TIMER_DELIVER_MS";
/// 5.x timer messages: delay in seconds.
pub const TIMER_DELAY_SEC: &str = "TIMER_DELAY_SEC";
/// 5.x timer messages: delay in ms.
pub const TIMER_DELAY_MS: &str = "TIMER_DELAY_MS";
/// 5.x batch consume queue: how many messages an inner batch holds.
pub const INNER_NUM: &str = "INNER_NUM";
/// 5.x batch consume queue: the queue offset of the first inner message.
pub const INNER_BASE: &str = "INNER_BASE";
/// 5.x light message queues: the queues a message is dispatched to.
pub const INNER_MULTI_DISPATCH: &str = "INNER_MULTI_DISPATCH";
/// 5.x light message queues: the message's offsets in those queues.
pub const INNER_MULTI_QUEUE_OFFSET: &str = "INNER_MULTI_QUEUE_OFFSET";
/// Pop consumption: the checkpoint.
pub const POP_CK: &str = "POP_CK";
/// Pop consumption: the first pop time.
pub const FIRST_POP_TIME: &str = "1ST_POP_TIME";
/// Pop consumption: the checkpoint offset.
pub const POP_CK_OFFSET: &str = "POP_CK_OFFSET";
/// The name of the CRC property a broker with `enabledAppendPropCRC` appends
/// (`MessageDecoder.createCrc32`).
pub const CRC32: &str = "__CRC32#";

/// Separates the keys in [`KEYS`] (`MessageConst.KEY_SEPARATOR`).
pub const KEY_SEPARATOR: char = ' ';
/// Separates a property's name from its value (`MessageDecoder.NAME_VALUE_SEPARATOR`).
pub const NAME_VALUE_SEPARATOR: char = '\u{1}';
/// Ends each property (`MessageDecoder.PROPERTY_SEPARATOR`).
pub const PROPERTY_SEPARATOR: char = '\u{2}';
