//! Interoperation with Apache's Java client (`rocketmq-client` at the broker's version, driven
//! by `scripts/java-peer`) on the real local cluster, one scenario per module. Needs `scripts/broker start` (the Java 4.9 broker by default) and `NAMESRV_ADDR`;
//! fails, never skips, without them, or without Java and Maven.

#[path = "interop/peer.rs"]
mod peer;

#[path = "interop/admin.rs"]
mod admin;
#[path = "interop/broadcast_offsets.rs"]
mod broadcast_offsets;
#[path = "interop/java_producer_to_rust.rs"]
mod java_producer_to_rust;
#[path = "interop/mixed_group.rs"]
mod mixed_group;
#[path = "interop/mixed_handover.rs"]
mod mixed_handover;
#[path = "interop/mixed_orderly.rs"]
mod mixed_orderly;
#[path = "interop/namespace.rs"]
mod namespace;
#[path = "interop/retries.rs"]
mod retries;
#[path = "interop/rust_producer_to_java.rs"]
mod rust_producer_to_java;
#[path = "interop/trace.rs"]
mod trace;
