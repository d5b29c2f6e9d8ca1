//! Enums of named choices, as options and pipeline keys spell them.

/// Defines an enum of command-line choices with their names (`name()`, `FromStr`); `$what`
/// names the choice in the error for an unknown name. Used by the join's policies, export's
/// options and partitions.
macro_rules! choice {
    ($(#[$doc:meta])* $name:ident, $what:literal { $($(#[$vdoc:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {
            $($(#[$vdoc])* $variant),+
        }

        impl $name {
            /// The name used on the command line and in summaries.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($text => Ok($name::$variant),)+
                    other => Err(format!(
                        concat!("unknown ", $what, " {:?} (known: {})"),
                        other,
                        [$($text),+].join(", ")
                    )),
                }
            }
        }
    };
}

pub(crate) use choice;
