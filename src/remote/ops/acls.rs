//! ACLs on a Kafka cluster: DescribeAcls with a filter that matches every binding (as
//! `kafka-acls.sh --list`), read only. A broker without an authorizer answers
//! SECURITY_DISABLED, which is a fact about the cluster, not a failure.

use kafka_protocol::messages::{ApiKey, DescribeAclsRequest, DescribeAclsResponse};

use super::{kafka_error, version};
use crate::kafka::acl;
use crate::remote::{KafkaClient, RemoteError, Target};
use crate::view::acls::{AclRow, Acls};

/// Every ACL binding of the cluster, by resource and then principal; or that it has no
/// authorizer.
pub async fn describe_acls(client: &KafkaClient) -> Result<Acls, RemoteError> {
    version(client, Target::Any, ApiKey::DescribeAcls).await?;
    let request = DescribeAclsRequest::default()
        .with_resource_type_filter(acl::ANY)
        .with_resource_name_filter(None)
        .with_pattern_type_filter(acl::ANY)
        .with_principal_filter(None)
        .with_host_filter(None)
        .with_operation(acl::ANY)
        .with_permission_type(acl::ANY);
    let response = client.send(Target::Any, request).await?;
    acls_from(&response)
}

/// What a DescribeAcls answer says.
pub fn acls_from(response: &DescribeAclsResponse) -> Result<Acls, RemoteError> {
    match response.error_code {
        0 => {}
        acl::SECURITY_DISABLED => return Ok(Acls::NoAuthorizer { embedded: false }),
        code => return Err(kafka_error("DescribeAcls", code, response.error_message.as_ref())),
    }
    let mut rows: Vec<AclRow> = response
        .resources
        .iter()
        .flat_map(|resource| {
            resource.acls.iter().map(move |a| AclRow {
                principal: a.principal.to_string(),
                host: a.host.to_string(),
                operation: acl::operation_name(a.operation),
                permission: acl::permission_name(a.permission_type),
                resource_type: acl::resource_type_name(resource.resource_type),
                resource_name: resource.resource_name.to_string(),
                pattern_type: acl::pattern_type_name(resource.pattern_type),
            })
        })
        .collect();
    rows.sort_by(|a, b| {
        (&a.resource_type, &a.resource_name, &a.principal, &a.operation).cmp(&(
            &b.resource_type,
            &b.resource_name,
            &b.principal,
            &b.operation,
        ))
    });
    Ok(Acls::Listed(rows))
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;
    use kafka_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
    use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

    use super::*;

    fn s(text: &str) -> StrBytes {
        StrBytes::from_string(text.to_string())
    }

    /// The answer as a broker sends it at `version`, read back as the client reads it.
    fn over_the_wire(response: DescribeAclsResponse, version: i16) -> DescribeAclsResponse {
        let mut buf = BytesMut::new();
        response.encode(&mut buf, version).expect("encodes");
        DescribeAclsResponse::decode(&mut buf.freeze(), version).expect("decodes")
    }

    #[test]
    fn a_describe_acls_answer_with_entries_becomes_one_row_per_binding() {
        let response = DescribeAclsResponse::default().with_resources(vec![
            DescribeAclsResource::default()
                .with_resource_type(2)
                .with_resource_name(s("orders"))
                .with_pattern_type(3)
                .with_acls(vec![
                    AclDescription::default()
                        .with_principal(s("User:bob"))
                        .with_host(s("*"))
                        .with_operation(4)
                        .with_permission_type(2),
                    AclDescription::default()
                        .with_principal(s("User:alice"))
                        .with_host(s("10.0.0.7"))
                        .with_operation(3)
                        .with_permission_type(3),
                ]),
            DescribeAclsResource::default()
                .with_resource_type(3)
                .with_resource_name(s("billing-"))
                .with_pattern_type(4)
                .with_acls(vec![
                    AclDescription::default()
                        .with_principal(s("User:alice"))
                        .with_host(s("*"))
                        .with_operation(3)
                        .with_permission_type(3),
                ]),
        ]);
        let acls = acls_from(&over_the_wire(response, 3)).expect("an answer");
        let Acls::Listed(rows) = acls else {
            panic!("expected bindings, got {acls:?}");
        };
        let row = |p: &str, h: &str, o: &str, perm: &str, t: &str, n: &str, pat: &str| AclRow {
            principal: p.into(),
            host: h.into(),
            operation: o.into(),
            permission: perm.into(),
            resource_type: t.into(),
            resource_name: n.into(),
            pattern_type: pat.into(),
        };
        assert_eq!(
            rows,
            vec![
                row("User:alice", "*", "READ", "ALLOW", "GROUP", "billing-", "PREFIXED"),
                row("User:alice", "10.0.0.7", "READ", "ALLOW", "TOPIC", "orders", "LITERAL"),
                row("User:bob", "*", "WRITE", "DENY", "TOPIC", "orders", "LITERAL"),
            ]
        );
    }

    #[test]
    fn security_disabled_means_no_authorizer_and_other_errors_are_errors() {
        let disabled = DescribeAclsResponse::default()
            .with_error_code(acl::SECURITY_DISABLED)
            .with_error_message(Some(s(acl::NO_AUTHORIZER_MESSAGE)));
        assert_eq!(
            acls_from(&over_the_wire(disabled, 1)).expect("an answer"),
            Acls::NoAuthorizer { embedded: false }
        );
        let denied = DescribeAclsResponse::default().with_error_code(31);
        let error = acls_from(&denied).expect_err("refused").to_string();
        assert!(error.contains("CLUSTER_AUTHORIZATION_FAILED"), "{error}");
    }
}
