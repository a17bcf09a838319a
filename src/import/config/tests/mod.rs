//! Each format's fixture against a table written from its documentation.

mod gateway;
mod linkerd;
