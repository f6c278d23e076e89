//! kafka-protocol's types, where krec-client's API must show them.
//!
//! These are the `kafka-protocol` crate's own messages and traits, re-exported as they are:
//! they may change with its version, and a bump of it changes this module's surface (and the
//! few calls listed below), nothing else. The rest of krec-client speaks in its own types.
//!
//! The calls that take or return them are the raw wire calls krec-consumer builds on:
//! - [`Connection::request`](crate::Connection::request) and its `request_*` variants, and
//!   [`ApiVersions::negotiate`](crate::versions::ApiVersions::negotiate): any
//!   [`ApiRequest`];
//! - [`FetchSession::request`](crate::fetch_session::FetchSession::request),
//!   [`FetchSession::close_request`](crate::fetch_session::FetchSession::close_request) and
//!   [`FetchSession::read_response`](crate::fetch_session::FetchSession::read_response):
//!   [`FetchRequest`] and [`FetchResponse`];
//! - [`group::join_group`](crate::group::join_group): [`JoinGroupResponse`];
//! - [`group::consumer_group_heartbeat`](crate::group::consumer_group_heartbeat):
//!   [`ConsumerGroupHeartbeatResponse`].

pub use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
pub use kafka_protocol::messages::{
    ConsumerGroupHeartbeatResponse, FetchRequest, FetchResponse, JoinGroupResponse,
};
pub use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Message};

/// A request this client sends, tied to its API key and response type.
///
/// kafka-protocol's own `Request` trait needs its `broker` feature (decoding requests), which a
/// client has no use for; this is the client half of it.
pub trait ApiRequest: Message + Encodable + HeaderVersion {
    /// The API key.
    const KEY: i16;
    /// The response message.
    type Response: Decodable + HeaderVersion;
}
