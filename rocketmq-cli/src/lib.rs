//! The library behind `rmq`: frame decoding to JSON lines and a small blocking client for
//! one-shot admin requests. The binary (`src/main.rs`) is a thin argument parser over it.

pub mod admin;
pub mod blocking;
pub mod consume;
pub mod decode;
pub mod lag;
pub mod produce;
pub mod progress;
pub mod query;
pub mod reset;
pub mod status;
