//! The core's pieces tested from outside the crate: rebalance allocation against the Java
//! client's results and under property tests, the per-queue cache (`ProcessQueue`), a delivery's messages, the pop consumer and the
//! producer, one group
//! per module, all in one test binary.

#[path = "api/allocate_invariants.rs"]
mod allocate_invariants;
#[path = "api/allocate_java_vectors.rs"]
mod allocate_java_vectors;
#[path = "api/messages.rs"]
mod messages;
#[path = "api/pop_consumer.rs"]
mod pop_consumer;
#[path = "api/process_queue.rs"]
mod process_queue;
#[path = "api/producer.rs"]
mod producer;
#[path = "support/stored.rs"]
mod stored;
