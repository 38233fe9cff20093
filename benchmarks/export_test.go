package benchmarks

import "context"

// RunOutageKit runs one kit row of the outage scenario (fault "cut" or
// "stall", with the recovery gate) for the tests.
// Without local, the processes have no near cache.
func RunOutageKit(ctx context.Context, env *Env, p OutageParams, fault string, local bool) (Row, error) {
	outageNoLocal = !local
	defer func() { outageNoLocal = false }()
	if err := env.DB.WithContext(ctx).AutoMigrate(&outageItem{}); err != nil {
		return Row{}, err
	}
	return runOutageFault(ctx, env, p.norm(), outageVariants[1], outageFault(fault), true)
}
