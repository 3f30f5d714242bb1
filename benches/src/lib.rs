//! Benchmark support (inputs shared by the criterion benches).
