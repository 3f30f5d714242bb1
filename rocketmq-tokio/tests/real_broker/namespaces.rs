//! tokio: two namespaces with the same topic and group names are isolated on the real
//! broker; the scenario is `rocketmq-driver/tests/support/namespaces.rs`.

use crate::scenario::namespaces;
use crate::support;

#[test]
fn tokio_namespaces_with_the_same_names_are_isolated() {
    support::block_on(namespaces::namespaces_with_the_same_names_are_isolated::<
        rocketmq_tokio::TokioRuntime,
    >("tokio-ns"));
}
