// Package acl implements RocketMQ 4.x "plain ACL" for the broker: accounts
// (accessKey/secretKey) with per-topic and per-group permissions, admin
// accounts, IP whitelists and HMAC-SHA1 request signatures, configured
// from a plain_acl.yml file that is reloaded when it changes.
//
// The file format, the signature and the decision order are RocketMQ's
// (PlainPermissionManager.validate), so a plain_acl.yml written for a Java
// broker works unchanged and the official clients' WithCredentials
// requests verify:
//
//  1. a client address matching a globalWhiteRemoteAddresses entry is let
//     through without further checks;
//  2. the request must carry an AccessKey ext field naming a known account;
//  3. a client address matching the account's whiteRemoteAddress is let
//     through (no signature, no permission check);
//  4. the Signature ext field must equal Base64(HMAC-SHA1(secretKey,
//     values of all other ext fields sorted by key, then the body));
//  5. admin-only requests need admin: true; every topic and group the
//     request touches needs the permission (PUB, SUB) from its entry in
//     the account's topicPerms/groupPerms; a resource without an entry
//     takes defaultTopicPerm / defaultGroupPerm. An entry decides alone
//     (topicA=DENY refuses even with a permissive default).
//
// Which requests are admin-only and which resources a request touches is
// the caller's to say (Request.Admin, Request.Resources): the broker
// derives them per request code from the typed header its handler
// decodes (broker/aclrules.go). Authorize decides further resources for a
// sender Check has verified, for handlers that learn what a request
// touches only after a lookup (the stored record's topic).
//
// A Validator is safe for concurrent use; reloads swap the whole
// configuration atomically, so a request is checked against one version.
package acl
