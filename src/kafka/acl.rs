//! Kafka's ACL vocabulary: the codes DescribeAcls carries for a resource type, a pattern
//! type, an operation and a permission, with the names `kafka-acls.sh` prints, and the
//! answer of a broker without an authorizer.

/// `ANY` in a filter (resource type, pattern type, operation, permission).
pub const ANY: i8 = 1;
/// The pattern type filter `MATCH`: literal, prefixed and wildcard bindings that match.
pub const MATCH: i8 = 2;
/// Kafka's SECURITY_DISABLED: the broker has no authorizer, so it keeps no ACLs.
pub const SECURITY_DISABLED: i16 = 54;
/// The message a broker without an authorizer answers ACL requests with.
pub const NO_AUTHORIZER_MESSAGE: &str = "No Authorizer is configured.";

/// A resource type's name (`TOPIC`, `GROUP`, `CLUSTER`...).
pub fn resource_type_name(code: i8) -> String {
    named(
        code,
        &[
            "UNKNOWN",
            "ANY",
            "TOPIC",
            "GROUP",
            "CLUSTER",
            "TRANSACTIONAL_ID",
            "DELEGATION_TOKEN",
            "USER",
        ],
    )
}

/// A pattern type's name (`LITERAL`, `PREFIXED`...).
pub fn pattern_type_name(code: i8) -> String {
    named(code, &["UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"])
}

/// An operation's name (`READ`, `WRITE`, `DESCRIBE_CONFIGS`...).
pub fn operation_name(code: i8) -> String {
    named(
        code,
        &[
            "UNKNOWN",
            "ANY",
            "ALL",
            "READ",
            "WRITE",
            "CREATE",
            "DELETE",
            "ALTER",
            "DESCRIBE",
            "CLUSTER_ACTION",
            "DESCRIBE_CONFIGS",
            "ALTER_CONFIGS",
            "IDEMPOTENT_WRITE",
            "CREATE_TOKENS",
            "DESCRIBE_TOKENS",
            "TWO_PHASE_COMMIT",
        ],
    )
}

/// A permission's name (`ALLOW`, `DENY`).
pub fn permission_name(code: i8) -> String {
    named(code, &["UNKNOWN", "ANY", "DENY", "ALLOW"])
}

fn named(code: i8, names: &[&str]) -> String {
    usize::try_from(code)
        .ok()
        .and_then(|i| names.get(i))
        .map_or_else(|| format!("UNKNOWN({code})"), |n| n.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_have_the_names_kafka_acls_prints() {
        assert_eq!(resource_type_name(2), "TOPIC");
        assert_eq!(pattern_type_name(4), "PREFIXED");
        assert_eq!(operation_name(10), "DESCRIBE_CONFIGS");
        assert_eq!(permission_name(3), "ALLOW");
        assert_eq!(operation_name(99), "UNKNOWN(99)");
        assert_eq!(permission_name(-1), "UNKNOWN(-1)");
    }
}
