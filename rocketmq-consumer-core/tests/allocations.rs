//! What the hot path must not allocate, counted by a global allocator. One test in its own
//! binary: the count is process-wide, so nothing else may run beside it.

use proto::message::Message;
use rocketmq_consumer_core::queue::ProcessQueue;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[path = "support/stored.rs"]
mod stored;

use stored::messages;

#[global_allocator]
static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

/// A delivery of one message (`consume_batch_size` 1, the default) is taken from the queue's
/// cache for the handler without an allocation: the message is held inline in `Messages`.
#[test]
fn one_message_for_the_handler_is_taken_without_an_allocation() {
    let mut pq = ProcessQueue::new(0);
    pq.put(messages(0..4));
    let region = Region::new(GLOBAL);
    let taken = pq.take_ready(1);
    let allocations = region.change().allocations;
    assert_eq!(allocations, 0, "take_ready(1) allocated");
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].queue_offset(), 0);
    // A batch still comes out whole, in queue order.
    let taken = pq.take_ready(3);
    let offsets: Vec<i64> = taken.iter().map(Message::queue_offset).collect();
    assert_eq!(offsets, [1, 2, 3]);
}
