//! smol: the revoke hook runs before the next owner gets the queue, on the real broker; the
//! scenario is `rocketmq-driver/tests/support/rebalance_hooks.rs`.

use crate::scenario::rebalance_hooks;

#[test]
fn smol_the_revoke_hook_runs_before_the_next_owner_gets_the_queue() {
    smol::block_on(
        rebalance_hooks::the_revoke_hook_runs_before_the_next_owner_gets_the_queue::<
            rocketmq_smol::SmolRuntime,
        >("smol"),
    );
}
