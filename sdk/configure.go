package sdk

import (
	"errors"

	"github.com/connkit/connkit/batcher"
	"github.com/connkit/connkit/internal/plugin"
	"github.com/connkit/connkit/middleware"
)

// sourcePlan and destinationPlan are what a pipeline's sdk.* parameters
// configure for a source or a destination, beside the connector itself.
type (
	sourcePlan struct {
		batch  batcher.Policy
		encode func(middleware.Read) middleware.Read // nil: nothing to encode
	}
	destinationPlan struct {
		batch                 batcher.Policy
		retry                 plugin.Retry
		decode, format, limit func(middleware.Write) middleware.Write // each nil when it has nothing to do
	}
)

// sourceGroups returns the sdk.* parameter groups of c's source, which
// store what they configure in p.
func (c Connector) sourceGroups(p *sourcePlan) []group {
	return []group{
		newGroup(or(c.Batching, DefaultBatching()), Batching.policy, &p.batch),
		newGroup(or(c.SchemaEncoding, middleware.DefaultSchemaEncoding()), middleware.SchemaEncoding.Wrap, &p.encode),
	}
}

// destinationGroups is [Connector.sourceGroups] for the destination; the
// wrappers are listed outermost first.
func (c Connector) destinationGroups(p *destinationPlan) []group {
	return []group{
		newGroup(or(c.Batching, DefaultBatching()), Batching.policy, &p.batch),
		newGroup(or(c.Retry, DefaultRetry()), Retry.policy, &p.retry),
		newGroup(or(c.SchemaDecoding, middleware.DefaultSchemaDecoding()), middleware.SchemaDecoding.Wrap, &p.decode),
		newGroup(or(c.RecordFormat, middleware.DefaultRecordFormat()), middleware.RecordFormat.Wrap, &p.format),
		newGroup(or(c.RateLimit, middleware.RateLimit{}), middleware.RateLimit.Wrap, &p.limit),
	}
}

// configureSource builds c's source from raw, the configuration Conduit
// sends, and resolves what the plugin server runs: the source's calls,
// wrapped in the SDK's middleware, and its policies. Errors name every
// parameter at fault.
func (c Connector) configureSource(raw map[string]string, env middleware.Env) (plugin.Source, error) {
	var p sourcePlan
	src, err := configure(c.Source, raw, env, c.sourceGroups(&p))
	if err != nil {
		return plugin.Source{}, err
	}
	return serverSource(src, p), nil
}

// configureDestination is [Connector.configureSource] for the destination.
func (c Connector) configureDestination(raw map[string]string, env middleware.Env) (plugin.Destination, error) {
	var p destinationPlan
	dst, err := configure(c.Destination, raw, env, c.destinationGroups(&p))
	if err != nil {
		return plugin.Destination{}, err
	}
	return serverDestination(dst, p), nil
}

// configure parses raw into the connector's config struct and into each
// group, reporting every bad or unknown parameter at once, and only then
// builds the connector: it never sees a bad configuration.
func configure[T any](f Factory[T], raw map[string]string, env middleware.Env, groups []group) (T, error) {
	var zero T
	if err := f.check(); err != nil {
		return zero, err
	}
	all, err := parametersWith(f.params, groups)
	if err != nil {
		return zero, err
	}
	cfg, errs := f.parse(raw)
	errs = append(unknownKeys(raw, all), errs...)
	for _, g := range groups {
		errs = append(errs, g.apply(raw, env)...)
	}
	if len(errs) > 0 {
		return zero, invalid(errs)
	}
	return f.make(cfg)
}

// parametersWith returns own and the groups' parameters together, or why
// they do not fit together.
func parametersWith(own []Parameter, groups []group) ([]Parameter, error) {
	var errs []error
	params := make([][]Parameter, 0, len(groups))
	for _, g := range groups {
		errs = append(errs, g.err)
		params = append(params, g.params)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return allParameters(own, params...)
}
