package config

import cconfig "github.com/conduitio/conduit-commons/config"

// Conduit returns params as Conduit describes parameters, keyed by name:
// what a plugin sends in its specification and a connector.yaml holds. A
// []string parameter is a string there, as Conduit has no list type.
func Conduit(params []Parameter) cconfig.Parameters {
	if params == nil {
		return nil
	}
	out := make(cconfig.Parameters, len(params))
	for _, p := range params {
		out[p.Name] = p.conduit()
	}
	return out
}

func (p Parameter) conduit() cconfig.Parameter {
	out := cconfig.Parameter{Default: p.Default, Description: p.Description}
	switch p.Type {
	case TypeInt:
		out.Type = cconfig.ParameterTypeInt
	case TypeFloat:
		out.Type = cconfig.ParameterTypeFloat
	case TypeBool:
		out.Type = cconfig.ParameterTypeBool
	case TypeDuration:
		out.Type = cconfig.ParameterTypeDuration
	default: // strings, and lists, which Conduit has no type for
		out.Type = cconfig.ParameterTypeString
	}
	if p.Required {
		out.Validations = append(out.Validations, cconfig.ValidationRequired{})
	}
	if p.GreaterThan != nil {
		out.Validations = append(out.Validations, cconfig.ValidationGreaterThan{V: *p.GreaterThan})
	}
	if p.LessThan != nil {
		out.Validations = append(out.Validations, cconfig.ValidationLessThan{V: *p.LessThan})
	}
	if len(p.OneOf) > 0 {
		out.Validations = append(out.Validations, cconfig.ValidationInclusion{List: p.OneOf})
	}
	if len(p.NoneOf) > 0 {
		out.Validations = append(out.Validations, cconfig.ValidationExclusion{List: p.NoneOf})
	}
	if p.pattern != nil {
		out.Validations = append(out.Validations, cconfig.ValidationRegex{Regex: p.pattern})
	}
	return out
}
