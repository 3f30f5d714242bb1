//! `rmq produce`: send messages to a topic, round robin over its writable queues, one at a
//! time per broker connection (enough for tests and demos; this is not a producer library).

use std::collections::BTreeMap;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use proto::headers::{SendMessageRequestV2, SendMessageResponse};
use proto::message::OutgoingMessage;
use proto::{Command, RequestCode, ResponseCode};

use crate::admin::{self, AdminError, TIMEOUT};
use crate::blocking::BlockingClient;

/// What to send.
#[derive(Clone, Debug)]
pub struct ProduceOptions {
    /// The topic (it must exist; see `rmq topic create`).
    pub topic: String,
    /// How many messages.
    pub count: usize,
    /// Body size in bytes when no body text is given.
    pub size: usize,
    /// The tag of every message.
    pub tag: Option<String>,
    /// The keys of every message.
    pub keys: Option<String>,
    /// The body text (`{i}` is replaced by the message's index).
    pub body: Option<String>,
}

/// What was sent.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProduceSummary {
    /// Messages the brokers stored.
    pub sent: usize,
    /// Messages refused or lost.
    pub errors: usize,
    /// Seconds taken.
    pub seconds: f64,
}

/// Sends `options.count` messages, calling `progress(done)` after each.
pub fn produce(
    namesrv: &str,
    options: &ProduceOptions,
    mut progress: impl FnMut(usize),
) -> Result<ProduceSummary, AdminError> {
    let route = admin::route(namesrv, &options.topic)?;
    let queues = route.publish_queues(&options.topic);
    if queues.is_empty() {
        return Err(AdminError::Body(format!(
            "topic {} has no writable queue",
            options.topic
        )));
    }
    let mut clients: BTreeMap<String, BlockingClient> = BTreeMap::new();
    let started = Instant::now();
    let mut summary = ProduceSummary::default();
    for i in 0..options.count {
        let queue = &queues[i % queues.len()];
        let addr = route
            .master_addr(queue.broker_name())
            .ok_or_else(|| AdminError::Body(format!("no master for {}", queue.broker_name())))?
            .to_owned();
        let body = match &options.body {
            Some(text) => text.replace("{i}", &i.to_string()).into_bytes(),
            None => vec![b'x'; options.size],
        };
        let mut message = OutgoingMessage::new(options.topic.clone(), body.clone());
        if let Some(tag) = &options.tag {
            message.set_tags(tag.clone());
        }
        if let Some(keys) = &options.keys {
            message.set_keys(keys.clone());
        }
        let header = SendMessageRequestV2 {
            producer_group: "rmq-producer".to_owned(),
            topic: options.topic.clone(),
            default_topic: "TBW102".to_owned(),
            default_topic_queue_nums: 4,
            queue_id: queue.queue_id(),
            sys_flag: 0,
            born_timestamp: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_millis() as i64)
                .unwrap_or_default(),
            flag: 0,
            properties: Some(message.encoded_properties()),
            ..SendMessageRequestV2::default()
        };
        let client = match clients.entry(addr.clone()) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(BlockingClient::connect(&addr, TIMEOUT)?)
            }
        };
        let request = Command::request(RequestCode::SEND_MESSAGE_V2, &header).with_body(body);
        match client.call(request, TIMEOUT) {
            Ok(response)
                if response.response_code() == ResponseCode::SUCCESS
                    && response.header::<SendMessageResponse>().is_ok() =>
            {
                summary.sent += 1;
            }
            Ok(_) => summary.errors += 1,
            Err(_) => {
                summary.errors += 1;
                clients.remove(&addr);
            }
        }
        progress(i + 1);
    }
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}
