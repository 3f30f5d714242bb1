//! smol consumers and producer on the cluster with ACL (`ACL_NAMESRV_ADDR`, started by
//! `scripts/test`); the scenarios are `rocketmq-driver/tests/support/secured.rs`.

use crate::scenario::secured;

#[test]
fn smol_signed_user_consumes_and_commits() {
    smol::block_on(secured::signed_user_consumes_and_commits::<
        rocketmq_smol::SmolRuntime,
    >("smol-acl"));
}

#[test]
fn smol_signed_user_locks_and_lite_pull_commits() {
    smol::block_on(secured::signed_user_locks_and_lite_pull_commits::<
        rocketmq_smol::SmolRuntime,
    >("smol-acl"));
}

#[test]
fn smol_wrong_or_missing_credentials_are_refused() {
    smol::block_on(secured::wrong_or_missing_credentials_are_refused::<
        rocketmq_smol::SmolRuntime,
    >("smol-acl"));
}

#[test]
fn smol_reader_without_group_permission_is_refused() {
    smol::block_on(secured::reader_without_group_permission_is_refused::<
        rocketmq_smol::SmolRuntime,
    >("smol-acl"));
}
