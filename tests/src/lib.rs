//! Test support for end-to-end tests (stand-in API server, binary lookup, fixtures).
