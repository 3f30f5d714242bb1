//! Per-queue consumption state: the cache of pulled messages ([`ProcessQueue`]) and the
//! flow-control decision taken before every pull ([`flow`]).

pub mod flow;
mod process;

pub use process::ProcessQueue;
