//! TLS (rustls) and SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 as in RFC 5802 / KIP-84) for
//! connections to external brokers.
