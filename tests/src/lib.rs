//! Shared helpers for the scenario tests.
