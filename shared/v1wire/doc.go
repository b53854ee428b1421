// Package v1wire is the wire format of the V1 API (/api/v1), shared by the
// server (shared/api) and its clients: the request and response bodies, with
// their JSON tags, strict-decoding rules and validation, and the one table
// from domain error codes (acs.Code) to HTTP statuses, headers and bodies,
// with its reverse for clients (DecodeError). It imports the domain and the
// event types, never the server.
package v1wire
