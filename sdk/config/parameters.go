package config

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The struct tags that turn a config struct field into a parameter; the
// grammar is in the package doc.
const (
	tagName     = "param"
	tagDefault  = "default"
	tagDesc     = "desc"
	tagValidate = "validate"
)

// Parameters returns the parameters that configs declare, each a config
// struct or a pointer to one, sorted by name. It fails if a tag is
// malformed, a default does not pass its own validations, or two fields
// declare the same parameter.
func Parameters(configs ...any) ([]Parameter, error) {
	var params []Parameter
	for _, config := range configs {
		t := reflect.TypeOf(config)
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t == nil || t.Kind() != reflect.Struct {
			return nil, fmt.Errorf("config: a config must be a struct, got %v", reflect.TypeOf(config))
		}
		var own []Parameter
		if err := collect(t, "", nil, &own); err != nil {
			return nil, err
		}
		for _, p := range own {
			if p.Default == "" {
				continue
			}
			if _, err := p.check(p.Default); err != nil {
				return nil, fmt.Errorf("config: %v: default fails its own validation: %w", t, err)
			}
		}
		params = append(params, own...)
	}
	if err := unique(params); err != nil {
		return nil, err
	}
	slices.SortFunc(params, func(a, b Parameter) int { return strings.Compare(a.Name, b.Name) })
	return params, nil
}

// unique reports a parameter that params declare twice.
func unique(params []Parameter) error {
	seen := make(map[string]bool, len(params))
	for _, p := range params {
		if seen[p.Name] {
			return fmt.Errorf("config: parameter %q is declared twice", p.Name)
		}
		seen[p.Name] = true
	}
	return nil
}

func collect(t reflect.Type, prefix string, index []int, out *[]Parameter) error {
	for i := range t.NumField() {
		f := t.Field(i)
		path := append(slices.Clip(index), i)
		name, tagged := f.Tag.Lookup(tagName)
		if !tagged {
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				if err := collect(f.Type, prefix, path, out); err != nil {
					return err
				}
			}
			continue
		}
		if !f.IsExported() {
			return fmt.Errorf("config: field %s has a param tag but is not exported", f.Name)
		}
		if f.Type.Kind() == reflect.Struct && f.Type != durationType {
			if err := collect(f.Type, prefix+name+".", path, out); err != nil {
				return err
			}
			continue
		}
		if f.Type.Kind() == reflect.Map && f.Type.Elem().Kind() == reflect.Struct {
			if err := collectGroup(f, prefix+name, path, out); err != nil {
				return err
			}
			continue
		}
		p, err := newParameter(f, prefix+name, path)
		if err != nil {
			return err
		}
		*out = append(*out, p)
	}
	return nil
}

// collectGroup declares the parameters of a map of structs: a field
// Collections map[string]Collection tagged param:"collections.*" declares
// collections.*.<p> for every parameter p of Collection.
func collectGroup(f reflect.StructField, name string, path []int, out *[]Parameter) error {
	if f.Type.Key().Kind() != reflect.String || !strings.HasSuffix(name, ".*") {
		return fmt.Errorf("config: field %s: a map of structs needs string keys and a name ending in .*", f.Name)
	}
	var inner []Parameter
	if err := collect(f.Type.Elem(), "", nil, &inner); err != nil {
		return err
	}
	for i := range inner {
		if inner[i].group != nil {
			return fmt.Errorf("config: field %s: maps of structs cannot nest", f.Name)
		}
		p := inner[i]
		p.Name = name + "." + inner[i].Name
		p.field, p.group, p.inner = nil, path, &inner[i]
		*out = append(*out, p)
	}
	return nil
}

func newParameter(f reflect.StructField, name string, path []int) (Parameter, error) {
	typ, ok := typeOf(f.Type)
	if !ok {
		return Parameter{}, fmt.Errorf("config: field %s: unsupported type %v", f.Name, f.Type)
	}
	if (f.Type.Kind() == reflect.Map) != strings.HasSuffix(name, ".*") {
		return Parameter{}, fmt.Errorf("config: field %s: a parameter name ending in .* needs a map[string]string field and vice versa", f.Name)
	}
	p := Parameter{
		Name:        name,
		Type:        typ,
		Default:     f.Tag.Get(tagDefault),
		Description: f.Tag.Get(tagDesc),
		kind:        f.Type.Kind(),
		field:       path,
	}
	rules := f.Tag.Get(tagValidate)
	for rules != "" {
		var rule string
		if strings.HasPrefix(rules, "regex=") {
			rule, rules = rules, ""
		} else {
			rule, rules, _ = strings.Cut(rules, ",")
		}
		if err := p.addRule(strings.TrimSpace(rule)); err != nil {
			return Parameter{}, fmt.Errorf("config: field %s: %w", f.Name, err)
		}
	}
	return p, nil
}

func (p *Parameter) addRule(rule string) error {
	kind, arg, _ := strings.Cut(rule, "=")
	switch kind {
	case "":
	case "required":
		p.Required = true
	case "gt", "lt":
		f, err := strconv.ParseFloat(arg, 64)
		if err != nil {
			return fmt.Errorf("validate %q needs a number", rule)
		}
		if kind == "gt" {
			p.GreaterThan = &f
		} else {
			p.LessThan = &f
		}
	case "inclusion":
		p.OneOf = strings.Split(arg, "|")
	case "exclusion":
		p.NoneOf = strings.Split(arg, "|")
	case "regex":
		re, err := regexp.Compile("^(?:" + arg + ")$")
		if err != nil {
			return fmt.Errorf("validate %q: %w", rule, err)
		}
		p.Pattern, p.pattern = arg, re
	default:
		return fmt.Errorf("unknown validation %q", rule)
	}
	return nil
}
