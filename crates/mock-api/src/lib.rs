//! A scripted mock of the Anthropic Messages API.
#![forbid(unsafe_code)]
