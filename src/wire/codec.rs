//! Frames and messages: a request frame (without its 4-byte length) becomes a
//! [`DecodedRequest`]; a response becomes a length-prefixed frame. Nothing here trusts the
//! bytes: every failure is a [`CodecError`] and the caller closes the connection.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable};

use super::versions;

/// One request frame's payload, as read from the socket.
pub type Frame = Bytes;

#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("frame of {0} bytes is too short for a request header")]
    Truncated(usize),
    #[error("unknown API key {0}")]
    UnknownApiKey(i16),
    #[error("{api:?} v{version} is not supported")]
    UnsupportedVersion { api: ApiKey, version: i16 },
    #[error("malformed {api:?} v{version} request: {reason}")]
    Malformed { api: ApiKey, version: i16, reason: String },
    #[error("encoding the {api:?} v{version} response: {reason}")]
    Encode { api: ApiKey, version: i16, reason: String },
}

/// The requests kdeck answers, one variant per API.
#[derive(Debug)]
pub enum RequestBody {
    Produce(ProduceRequest),
    Fetch(FetchRequest),
    ListOffsets(ListOffsetsRequest),
    Metadata(MetadataRequest),
    OffsetCommit(OffsetCommitRequest),
    OffsetFetch(OffsetFetchRequest),
    FindCoordinator(FindCoordinatorRequest),
    JoinGroup(JoinGroupRequest),
    Heartbeat(HeartbeatRequest),
    LeaveGroup(LeaveGroupRequest),
    SyncGroup(SyncGroupRequest),
    DescribeGroups(DescribeGroupsRequest),
    ListGroups(ListGroupsRequest),
    ApiVersions(ApiVersionsRequest),
    /// An ApiVersions request of a version we do not know: Kafka does not parse it and answers
    /// with a v0 response carrying UNSUPPORTED_VERSION and the supported list.
    ApiVersionsUnsupported,
    CreateTopics(CreateTopicsRequest),
    DeleteTopics(DeleteTopicsRequest),
    InitProducerId(InitProducerIdRequest),
    OffsetForLeaderEpoch(OffsetForLeaderEpochRequest),
    DescribeConfigs(DescribeConfigsRequest),
    IncrementalAlterConfigs(IncrementalAlterConfigsRequest),
    AlterConfigs(AlterConfigsRequest),
    CreatePartitions(CreatePartitionsRequest),
    ElectLeaders(ElectLeadersRequest),
    AlterPartitionReassignments(AlterPartitionReassignmentsRequest),
    ListPartitionReassignments(ListPartitionReassignmentsRequest),
    DescribeCluster(DescribeClusterRequest),
    DeleteGroups(DeleteGroupsRequest),
    OffsetDelete(OffsetDeleteRequest),
    DescribeLogDirs(DescribeLogDirsRequest),
    DeleteRecords(DeleteRecordsRequest),
    DescribeAcls(DescribeAclsRequest),
    AddPartitionsToTxn(AddPartitionsToTxnRequest),
    AddOffsetsToTxn(AddOffsetsToTxnRequest),
    EndTxn(EndTxnRequest),
    WriteTxnMarkers(WriteTxnMarkersRequest),
    TxnOffsetCommit(TxnOffsetCommitRequest),
    DescribeTransactions(DescribeTransactionsRequest),
    ListTransactions(ListTransactionsRequest),
}

#[derive(Debug)]
pub struct DecodedRequest {
    pub api_key: ApiKey,
    pub api_version: i16,
    pub correlation_id: i32,
    pub client_id: Option<String>,
    /// Where the request came from as Kafka shows a member's host (`/127.0.0.1`); the
    /// connection fills it in.
    pub client_host: String,
    pub body: RequestBody,
}

/// Smallest request header: api key, version, correlation id, client id length.
const MIN_HEADER: usize = 10;

/// Decodes one request frame (the bytes after the length prefix).
pub fn decode_request(mut frame: Frame) -> Result<DecodedRequest, CodecError> {
    if frame.len() < MIN_HEADER {
        return Err(CodecError::Truncated(frame.len()));
    }
    let raw_key = i16::from_be_bytes([frame[0], frame[1]]);
    let api_version = i16::from_be_bytes([frame[2], frame[3]]);
    let correlation_id = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
    let api_key = ApiKey::try_from(raw_key).map_err(|_| CodecError::UnknownApiKey(raw_key))?;
    if !versions::is_supported(api_key, api_version) {
        if api_key == ApiKey::ApiVersions {
            return Ok(DecodedRequest {
                api_key,
                api_version,
                correlation_id,
                client_id: None,
                client_host: String::new(),
                body: RequestBody::ApiVersionsUnsupported,
            });
        }
        return Err(CodecError::UnsupportedVersion {
            api: api_key,
            version: api_version,
        });
    }
    let malformed = |e: anyhow::Error| CodecError::Malformed {
        api: api_key,
        version: api_version,
        reason: format!("{e:#}"),
    };
    let header = RequestHeader::decode(&mut frame, api_key.request_header_version(api_version)).map_err(malformed)?;
    let v = api_version;
    let b = &mut frame;
    let body = match api_key {
        ApiKey::Produce => RequestBody::Produce(ProduceRequest::decode(b, v).map_err(malformed)?),
        ApiKey::Fetch => RequestBody::Fetch(FetchRequest::decode(b, v).map_err(malformed)?),
        ApiKey::ListOffsets => RequestBody::ListOffsets(ListOffsetsRequest::decode(b, v).map_err(malformed)?),
        ApiKey::Metadata => RequestBody::Metadata(MetadataRequest::decode(b, v).map_err(malformed)?),
        ApiKey::OffsetCommit => RequestBody::OffsetCommit(OffsetCommitRequest::decode(b, v).map_err(malformed)?),
        ApiKey::OffsetFetch => RequestBody::OffsetFetch(OffsetFetchRequest::decode(b, v).map_err(malformed)?),
        ApiKey::FindCoordinator => {
            RequestBody::FindCoordinator(FindCoordinatorRequest::decode(b, v).map_err(malformed)?)
        }
        ApiKey::JoinGroup => RequestBody::JoinGroup(JoinGroupRequest::decode(b, v).map_err(malformed)?),
        ApiKey::Heartbeat => RequestBody::Heartbeat(HeartbeatRequest::decode(b, v).map_err(malformed)?),
        ApiKey::LeaveGroup => RequestBody::LeaveGroup(LeaveGroupRequest::decode(b, v).map_err(malformed)?),
        ApiKey::SyncGroup => RequestBody::SyncGroup(SyncGroupRequest::decode(b, v).map_err(malformed)?),
        ApiKey::DescribeGroups => RequestBody::DescribeGroups(DescribeGroupsRequest::decode(b, v).map_err(malformed)?),
        ApiKey::ListGroups => RequestBody::ListGroups(ListGroupsRequest::decode(b, v).map_err(malformed)?),
        ApiKey::ApiVersions => RequestBody::ApiVersions(ApiVersionsRequest::decode(b, v).map_err(malformed)?),
        ApiKey::CreateTopics => RequestBody::CreateTopics(CreateTopicsRequest::decode(b, v).map_err(malformed)?),
        ApiKey::DeleteTopics => RequestBody::DeleteTopics(DeleteTopicsRequest::decode(b, v).map_err(malformed)?),
        ApiKey::InitProducerId => RequestBody::InitProducerId(InitProducerIdRequest::decode(b, v).map_err(malformed)?),
        ApiKey::OffsetForLeaderEpoch => {
            RequestBody::OffsetForLeaderEpoch(OffsetForLeaderEpochRequest::decode(b, v).map_err(malformed)?)
        }
        ApiKey::DescribeConfigs => {
            RequestBody::DescribeConfigs(DescribeConfigsRequest::decode(b, v).map_err(malformed)?)
        }
        ApiKey::IncrementalAlterConfigs => {
            RequestBody::IncrementalAlterConfigs(IncrementalAlterConfigsRequest::decode(b, v).map_err(malformed)?)
        }
        ApiKey::AlterConfigs => RequestBody::AlterConfigs(AlterConfigsRequest::decode(b, v).map_err(malformed)?),
        ApiKey::CreatePartitions => {
            RequestBody::CreatePartitions(CreatePartitionsRequest::decode(b, v).map_err(malformed)?)
        }
        ApiKey::ElectLeaders => RequestBody::ElectLeaders(ElectLeadersRequest::decode(b, v).map_err(malformed)?),
        ApiKey::AlterPartitionReassignments => RequestBody::AlterPartitionReassignments(
            AlterPartitionReassignmentsRequest::decode(b, v).map_err(malformed)?,
        ),
        ApiKey::ListPartitionReassignments => {
            RequestBody::ListPartitionReassignments(ListPartitionReassignmentsRequest::decode(b, v).map_err(malformed)?)
        }
        ApiKey::DeleteGroups => RequestBody::DeleteGroups(DeleteGroupsRequest::decode(b, v).map_err(malformed)?),
        ApiKey::OffsetDelete => RequestBody::OffsetDelete(OffsetDeleteRequest::decode(b, v).map_err(malformed)?),
        ApiKey::DescribeCluster => {
            RequestBody::DescribeCluster(DescribeClusterRequest::decode(b, v).map_err(malformed)?)
        }
        ApiKey::DescribeLogDirs => {
            RequestBody::DescribeLogDirs(DescribeLogDirsRequest::decode(b, v).map_err(malformed)?)
        }
        ApiKey::DeleteRecords => RequestBody::DeleteRecords(DeleteRecordsRequest::decode(b, v).map_err(malformed)?),
        ApiKey::DescribeAcls => RequestBody::DescribeAcls(DescribeAclsRequest::decode(b, v).map_err(malformed)?),
        ApiKey::AddPartitionsToTxn => {
            RequestBody::AddPartitionsToTxn(AddPartitionsToTxnRequest::decode(b, v).map_err(malformed)?)
        }
        ApiKey::AddOffsetsToTxn => {
            RequestBody::AddOffsetsToTxn(AddOffsetsToTxnRequest::decode(b, v).map_err(malformed)?)
        }
        ApiKey::EndTxn => RequestBody::EndTxn(EndTxnRequest::decode(b, v).map_err(malformed)?),
        ApiKey::WriteTxnMarkers => {
            RequestBody::WriteTxnMarkers(WriteTxnMarkersRequest::decode(b, v).map_err(malformed)?)
        }
        ApiKey::TxnOffsetCommit => {
            RequestBody::TxnOffsetCommit(TxnOffsetCommitRequest::decode(b, v).map_err(malformed)?)
        }
        ApiKey::DescribeTransactions => {
            RequestBody::DescribeTransactions(DescribeTransactionsRequest::decode(b, v).map_err(malformed)?)
        }
        ApiKey::ListTransactions => {
            RequestBody::ListTransactions(ListTransactionsRequest::decode(b, v).map_err(malformed)?)
        }
        other => {
            return Err(CodecError::UnsupportedVersion {
                api: other,
                version: api_version,
            });
        }
    };
    Ok(DecodedRequest {
        api_key,
        api_version,
        correlation_id,
        client_id: header.client_id.map(|c| c.to_string()),
        client_host: String::new(),
        body,
    })
}

/// A complete response frame: length, response header, body.
pub fn encode_response<R: Encodable>(
    api_key: ApiKey,
    api_version: i16,
    correlation_id: i32,
    response: &R,
) -> Result<Bytes, CodecError> {
    let fail = |e: anyhow::Error| CodecError::Encode {
        api: api_key,
        version: api_version,
        reason: format!("{e:#}"),
    };
    let mut out = BytesMut::with_capacity(64);
    out.put_i32(0);
    ResponseHeader::default()
        .with_correlation_id(correlation_id)
        .encode(&mut out, api_key.response_header_version(api_version))
        .map_err(fail)?;
    response.encode(&mut out, api_version).map_err(fail)?;
    let len = i32::try_from(out.len() - 4).map_err(|_| CodecError::Encode {
        api: api_key,
        version: api_version,
        reason: "response larger than 2 GiB".into(),
    })?;
    out[..4].copy_from_slice(&len.to_be_bytes());
    Ok(out.freeze())
}
