//! One module per subcommand.

pub mod key;
pub mod root;
