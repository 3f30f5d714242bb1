//! smol: two namespaces with the same topic and group names are isolated on the real
//! broker; the scenario is `rocketmq-driver/tests/support/namespaces.rs`.

use crate::scenario::namespaces;

#[test]
fn smol_namespaces_with_the_same_names_are_isolated() {
    smol::block_on(namespaces::namespaces_with_the_same_names_are_isolated::<
        rocketmq_smol::SmolRuntime,
    >("smol-ns"));
}
