//! tokio consumers and producer on the cluster with ACL (`ACL_NAMESRV_ADDR`, started by
//! `scripts/test`); the scenarios are `rocketmq-driver/tests/support/secured.rs`.

use crate::scenario::secured;
use crate::support;

#[test]
fn tokio_signed_user_consumes_and_commits() {
    support::block_on(secured::signed_user_consumes_and_commits::<
        rocketmq_tokio::TokioRuntime,
    >("tokio-acl"));
}

#[test]
fn tokio_signed_user_locks_and_lite_pull_commits() {
    support::block_on(secured::signed_user_locks_and_lite_pull_commits::<
        rocketmq_tokio::TokioRuntime,
    >("tokio-acl"));
}

#[test]
fn tokio_wrong_or_missing_credentials_are_refused() {
    support::block_on(secured::wrong_or_missing_credentials_are_refused::<
        rocketmq_tokio::TokioRuntime,
    >("tokio-acl"));
}

#[test]
fn tokio_reader_without_group_permission_is_refused() {
    support::block_on(secured::reader_without_group_permission_is_refused::<
        rocketmq_tokio::TokioRuntime,
    >("tokio-acl"));
}
