//! The protected resource side (to come in this change).
