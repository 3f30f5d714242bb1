//! A delivery's messages (`Messages`): a batch reads, iterates and converts in queue order
//! whichever way it was built, and a handler may change its messages in place. That one
//! message is taken without an allocation is pinned in `tests/allocations.rs`.

use proto::message::Message;
use rocketmq_consumer_core::Messages;

use crate::stored::messages;

fn offsets(messages: &[Message]) -> Vec<i64> {
    messages.iter().map(Message::queue_offset).collect()
}

#[test]
fn every_way_of_building_reads_in_queue_order() {
    let one = Messages::from(messages([7]).remove(0));
    assert_eq!(offsets(&one), [7]);
    assert_eq!(one.clone().into_vec().len(), 1);

    let collected: Messages = messages(3..6).into_iter().collect();
    assert_eq!(offsets(&collected), [3, 4, 5]);
    let by_value: Vec<i64> = collected
        .clone()
        .into_iter()
        .map(|m| m.queue_offset())
        .collect();
    assert_eq!(by_value, [3, 4, 5]);
    let backwards: Vec<i64> = collected
        .into_iter()
        .rev()
        .map(|m| m.queue_offset())
        .collect();
    assert_eq!(backwards, [5, 4, 3]);

    // Pushing past one message moves it out of line, keeping the order.
    let mut grown = Messages::default();
    assert!(grown.is_empty());
    grown.extend(messages(10..13));
    assert_eq!(offsets(&grown), [10, 11, 12]);
    assert_eq!(Vec::from(grown).len(), 3);

    let from_vec = Messages::from(messages(0..2));
    assert_eq!(from_vec.into_iter().len(), 2);
}

#[test]
fn a_handler_may_change_its_messages_in_place() {
    let mut batch: Messages = messages(0..2).into_iter().collect();
    for message in &mut batch {
        message.set_reconsume_times(3);
    }
    batch[0].set_property("K", "v");
    assert!(batch.iter().all(|m| m.reconsume_times() == 3));
    assert_eq!(batch[0].property("K"), Some("v"));
}
