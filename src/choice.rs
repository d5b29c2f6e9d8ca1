//! Enums of named choices, as options and pipeline keys spell them.

/// Defines an enum of named choices: `name()`, `FromStr` and `Display` by name, serde as the
/// name (so a pipeline key and a flag read the same words), and `Default` when a
/// `default = Variant` follows `$what`. A variant may also be read by older names
/// (`Variant = "name" | "alias"`); it is always written by its first. Its JSON Schema (for the
/// pipeline schema) is a string enum of every name. `$what` names the choice in the error for an unknown
/// name. Used by the join's policies, export's options and partitions.
macro_rules! choice {
    ($(#[$doc:meta])* $name:ident, $what:literal $(, default = $default:ident)? { $($(#[$vdoc:meta])* $variant:ident = $text:literal $(| $alias:literal)*),+ $(,)? }) => {
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

        $(
            impl Default for $name {
                fn default() -> Self {
                    $name::$default
                }
            }
        )?

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($text $(| $alias)* => Ok($name::$variant),)+
                    other => Err(format!(
                        concat!("unknown ", $what, " {:?} (known: {})"),
                        other,
                        [$($text),+].join(", ")
                    )),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                $crate::choice::from_name(d)
            }
        }

        /// In the pipeline schema: a string, one of the names (older ones included).
        impl schemars::JsonSchema for $name {
            fn inline_schema() -> bool {
                true
            }

            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({"type": "string", "enum": [$($text $(, $alias)*),+]})
            }
        }
    };
}

pub(crate) use choice;

/// Deserializes a value written as its name (`FromStr`); an unknown name is an error that
/// says which names are known.
pub fn from_name<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: std::str::FromStr<Err = String>,
{
    let text = <String as serde::Deserialize>::deserialize(d)?;
    text.parse().map_err(serde::de::Error::custom)
}
