// Package groups splits a job's URLs into per-domain groups, the unit of work
// that travels as one queue message (one Amazon SQS message body).
//
// A Splitter takes the job's URLs one at a time with their registrable domain
// (eTLD+1) and input line number, checks each distinct URL once while
// remembering every line it appeared on, and finally cuts each domain's URLs
// into groups of at most a configured count whose JSON encoding stays within
// MaxMessageBytes. Groups come largest domain first (longest-processing-time
// first), so the domains that bound a job's duration start at once.
//
// Encode and Decode turn a Group into a message body and back; Decode
// validates what it reads and names the offending field on error.
package groups
