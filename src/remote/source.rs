//! [`RemoteSource`]: the console's `ClusterSource` for an external cluster. A refresh task
//! builds a `ClusterView` from Metadata, ListOffsets and the group APIs, derives events by
//! diffing successive snapshots, and reports connection problems in the view.
