//! `kdeck bench ...`: measurements that print Kafka-perf-test-style lines. Benchmarks live
//! here, apart from the tests, which never assert a duration.

pub mod storage;

/// Kafka's perf tools count MB as 1024 * 1024 bytes.
pub fn mb(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}
