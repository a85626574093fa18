//! soc
