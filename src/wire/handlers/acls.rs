//! DescribeAcls, answered as a Kafka broker without an authorizer answers it (Kafka's
//! `AclApis` when `authorizer.class.name` is unset): SECURITY_DISABLED with "No Authorizer is
//! configured." The embedded cluster checks no permissions, so it has no ACLs to list.

use kafka_protocol::messages::DescribeAclsResponse;

use super::str_bytes;
use crate::kafka::acl::{NO_AUTHORIZER_MESSAGE, SECURITY_DISABLED};

pub fn describe_acls() -> DescribeAclsResponse {
    DescribeAclsResponse::default()
        .with_error_code(SECURITY_DISABLED)
        .with_error_message(Some(str_bytes(NO_AUTHORIZER_MESSAGE)))
}
