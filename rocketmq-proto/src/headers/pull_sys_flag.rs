//! The `sysFlag` bits of a pull request
//! ([`PullMessageRequest::sys_flag`](super::PullMessageRequest::sys_flag)), Java `PullSysFlag`
//! (`remoting-protocol.md` §4.1).
//!
//! The usual values: a push consumer sends [`SUSPEND`], plus [`COMMIT_OFFSET`] when it has an
//! in-memory offset to commit (`0x02` / `0x03`); a lite-pull consumer sends
//! `SUSPEND | SUBSCRIPTION | LITE_PULL` (`0x16`).
//!
//! ```
//! use rocketmq_proto::headers::pull_sys_flag;
//!
//! let flag = pull_sys_flag::build(true, true, false, false, false);
//! assert_eq!(flag, 0x03);
//! assert!(pull_sys_flag::has_suspend(flag));
//! assert_eq!(pull_sys_flag::clear_commit_offset(flag), 0x02);
//! ```

/// Bit 0: the broker stores the request's `commitOffset` as the group's committed offset.
pub const COMMIT_OFFSET: i32 = 0x1;
/// Bit 1: the broker may hold the request (long polling) while there is nothing to return.
pub const SUSPEND: i32 = 0x2;
/// Bit 2: the broker filters with the request's `subscription` / `expressionType` instead of
/// the subscription registered by heartbeat.
pub const SUBSCRIPTION: i32 = 0x4;
/// Bit 3: legacy class filter (filter servers); never set by current clients.
pub const CLASS_FILTER: i32 = 0x8;
/// Bit 4: the request comes from a lite-pull consumer.
pub const LITE_PULL: i32 = 0x10;

/// The flag with the given bits set, as Java `PullSysFlag.buildSysFlag`.
pub const fn build(
    commit_offset: bool,
    suspend: bool,
    subscription: bool,
    class_filter: bool,
    lite_pull: bool,
) -> i32 {
    let mut flag = 0;
    if commit_offset {
        flag |= COMMIT_OFFSET;
    }
    if suspend {
        flag |= SUSPEND;
    }
    if subscription {
        flag |= SUBSCRIPTION;
    }
    if class_filter {
        flag |= CLASS_FILTER;
    }
    if lite_pull {
        flag |= LITE_PULL;
    }
    flag
}

/// `flag` without [`COMMIT_OFFSET`]: Java clears it when pulling from a slave
/// (`PullAPIWrapper.pullKernelImpl`).
pub const fn clear_commit_offset(flag: i32) -> i32 {
    flag & !COMMIT_OFFSET
}

/// Whether [`COMMIT_OFFSET`] is set.
pub const fn has_commit_offset(flag: i32) -> bool {
    flag & COMMIT_OFFSET != 0
}

/// Whether [`SUSPEND`] is set.
pub const fn has_suspend(flag: i32) -> bool {
    flag & SUSPEND != 0
}

/// Whether [`SUBSCRIPTION`] is set.
pub const fn has_subscription(flag: i32) -> bool {
    flag & SUBSCRIPTION != 0
}

/// Whether [`CLASS_FILTER`] is set.
pub const fn has_class_filter(flag: i32) -> bool {
    flag & CLASS_FILTER != 0
}

/// Whether [`LITE_PULL`] is set.
pub const fn has_lite_pull(flag: i32) -> bool {
    flag & LITE_PULL != 0
}
