//! ACLs as the console shows them (DescribeAcls, read only): one row per binding, or the
//! plain fact that the cluster has no authorizer, so every client may do everything.

/// One ACL binding: who may (or may not) do what, from where, to which resources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclRow {
    /// `User:alice`.
    pub principal: String,
    /// `*`, or one host.
    pub host: String,
    /// `READ`, `WRITE`, `ALL`...
    pub operation: String,
    /// `ALLOW` or `DENY`.
    pub permission: String,
    /// `TOPIC`, `GROUP`, `CLUSTER`...
    pub resource_type: String,
    pub resource_name: String,
    /// `LITERAL` or `PREFIXED`.
    pub pattern_type: String,
}

impl AclRow {
    /// Whether `filter` appears in any of its columns.
    pub fn matches(&self, filter: &str) -> bool {
        [
            &self.principal,
            &self.host,
            &self.operation,
            &self.permission,
            &self.resource_type,
            &self.resource_name,
            &self.pattern_type,
        ]
        .iter()
        .any(|column| column.contains(filter))
    }
}

/// What a cluster says of its ACLs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acls {
    /// Every binding (possibly none).
    Listed(Vec<AclRow>),
    /// No authorizer: the cluster keeps no ACLs and refuses nobody. `embedded`: kdeck's own
    /// cluster (else an external one answered SECURITY_DISABLED).
    NoAuthorizer { embedded: bool },
}

/// A source's answer to "show me the ACLs", or why not.
pub type AclsAnswer = Result<Acls, String>;

/// What a source that cannot describe ACLs answers.
pub const NO_ACLS: &str = "this source cannot show ACLs";
