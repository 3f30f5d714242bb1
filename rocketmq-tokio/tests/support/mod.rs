//! What the tokio test binaries (`real_broker`, `broker_restart`) share.

use std::future::Future;

/// Runs `future` to completion on a new multi-thread tokio runtime (4 workers, IO and time
/// enabled), then drops the runtime.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(future)
}
