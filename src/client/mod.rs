//! In-process clients of the embedded cluster: producer, consumer and admin, used by the demo
//! workload, the tests, the benchmarks and the CLI.

pub mod admin;
pub mod assignor;
pub mod consumer;
pub mod partitioner;
pub mod producer;
pub mod transactional;
