//! Model (placeholder).
