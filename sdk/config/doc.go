// Package config turns a connector's config struct into its parameters: it
// parses the raw configuration Conduit sends into the struct ([Parse]) and
// describes the parameters to Conduit and to users ([Parameters],
// [Specification]). The struct is the one place a parameter is declared,
// so what users read cannot drift from what is parsed.
//
// # Tags
//
// An exported field with a param tag is a parameter:
//
//	param:"name"      the parameter's name; on a struct field, the prefix
//	                  "name." of its fields' names
//	default:"value"   used when the parameter is absent or empty
//	desc:"text"       what the parameter does, shown to users
//	validate:"rules"  comma-separated rules:
//	                    required        the value may not be absent or empty
//	                    gt=N, lt=N      a number, or a duration in nanoseconds,
//	                                    greater than N, less than N (exclusive:
//	                                    gt=-1 on an integer means at least 0)
//	                    inclusion=a|b   one of the values a, b, …
//	                    exclusion=a|b   none of them
//	                    regex=EXPR      the whole value matches EXPR; this rule
//	                                    comes last, as EXPR may hold commas
//
// # Field types
//
//   - string, bool, int and uint of every size, float32 and float64, and
//     time.Duration (written "1s", "250ms"). An integer must also fit its
//     field's type, and a float must be finite.
//   - []string, written comma-separated ("a, b,c"); blank items are dropped.
//   - map[string]string, with a name ending in ".*": every parameter under
//     the prefix, keyed by the rest of its name ("format.options.id: int"
//     gives Options["id"] = "int"). The rules apply to each value.
//   - A struct (not time.Duration): nested parameters, named with the
//     field's param as prefix. An embedded struct without a param tag has
//     its fields flattened into the outer struct's.
//   - A map of structs with string keys, with a name ending in ".*": one
//     element per name given ("collections.users.format: raw" fills
//     Collections["users"].Format); its struct's parameters are declared as
//     "collections.*.format" and so on. Such maps cannot nest.
//
// Fields without a param tag are ignored.
//
// # Errors
//
// Everything wrong is reported at once, in one error: unknown parameters
// (with the closest known name), missing required ones, values of the
// wrong type and values that fail a rule, each as a [*ParameterError]
// naming the parameter, the value given and what was expected. Its
// message reads on one line, as Conduit logs it, the problems separated
// by "; ":
//
//	parameter "count": got "-1", expected at least 0; parameter "url": is required but missing
//
// Its Unwrap method returns the problems, as errors.Join's does, so that
// errors.As finds a [*ParameterError] among them.
//
// # Custom validation
//
// Checks that tags cannot express, such as a parameter that depends on
// another, belong in a Validate method (see [Validator]) on the config
// struct. Validate runs after the tags are applied, also when some
// parameters failed, so that one error lists every problem: a parameter
// that failed holds its default then, and what Validate reports about a
// parameter already reported is left out. The factory given to
// sdk.NewSource or sdk.NewDestination runs last, only once the
// configuration is valid; it may refuse it too, preferably with a
// [*ParameterError], but its error cannot join the others, as it never
// sees a configuration with errors.
//
// # Specifications
//
// A plugin binary run with the argument "spec" prints its [Specification]:
// as JSON, as the connector.yaml file of the incumbent Conduit SDK's specgen
// ([Specification.YAML]), or as a README table of its own parameters
// ([Specification.Markdown]). [Conduit] gives parameters in the form a
// plugin sends Conduit.
package config
