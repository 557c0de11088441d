package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/crw-dev/crw/cmd/crw/internal/cmd/flow/list"
	"github.com/crw-dev/crw/cmd/crw/internal/ops"
	"github.com/crw-dev/crw/engine/timeline"
)

// flagValues are the values a flag takes, where they are a closed set.
var flagValues = map[string][]string{
	"tier-steps": {"auto\tcrw.tierStep moves a node up at once", "ask\tthe step waits for the owner's decision"},
	"wake":       {"on", "off"},
}

// complete gives every command that takes a run the completion of run ids (newest first, with
// their state) and, where it takes a call next, of that run's call ids; and the flags whose
// values are a closed set or files the completion of those.
func complete(inv *invocation, root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if positional, flag := runArg(c); positional && c.ValidArgsFunction == nil {
			takesCall := false
			if fields := strings.Fields(c.Use); len(fields) > 2 && strings.Trim(fields[2], "[]") == "CALL" {
				takesCall = true
			}
			c.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
				switch {
				case len(args) == 0:
					return runIDs(inv), cobra.ShellCompDirectiveNoFileComp
				case len(args) == 1 && takesCall:
					return callIDs(inv, args[0]), cobra.ShellCompDirectiveNoFileComp
				}
				return nil, cobra.ShellCompDirectiveDefault
			}
		} else if flag {
			_ = c.RegisterFlagCompletionFunc("run", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
				return runIDs(inv), cobra.ShellCompDirectiveNoFileComp
			})
		}
		if c.Flags().Lookup("backend") != nil && inv.backends != nil {
			_ = c.RegisterFlagCompletionFunc("backend", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
				return inv.backends.Names(), cobra.ShellCompDirectiveNoFileComp
			})
		}
		for name, values := range flagValues {
			if c.Flags().Lookup(name) != nil {
				_ = c.RegisterFlagCompletionFunc(name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
					return values, cobra.ShellCompDirectiveNoFileComp
				})
			}
		}
		if c.Flags().Lookup("status") != nil && c.Name() == "list" {
			_ = c.RegisterFlagCompletionFunc("status", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
				return list.States, cobra.ShellCompDirectiveNoFileComp
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	_ = root.RegisterFlagCompletionFunc("state", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return nil, cobra.ShellCompDirectiveFilterDirs
	})
}

// maxCompleted bounds what a completion lists.
const maxCompleted = 200

// runIDs are the state folder's runs, newest first, each with its state.
func runIDs(inv *invocation) []string {
	svc, err := inv.service()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ids, err := svc.Store.List(ctx)
	if err != nil {
		return nil
	}
	slices.Reverse(ids)
	var out []string
	for _, id := range ids {
		if len(out) == maxCompleted {
			break
		}
		desc := ""
		if st, err := svc.Status(ctx, id); err == nil {
			desc = string(st.State)
			if st.Status != "" {
				desc += " " + string(st.Status)
			}
		}
		out = append(out, id+"\t"+desc)
	}
	return out
}

// callIDs are a run's calls, each with its role, node and status.
func callIDs(inv *invocation, ref string) []string {
	svc, err := inv.service()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	root, _ := inv.stateDir()
	run, err := ops.ResolveRun(ctx, svc.Store, root, ref)
	if err != nil {
		return nil
	}
	tl, err := svc.Timeline(ctx, run, timeline.Options{})
	if err != nil {
		return nil
	}
	var out []string
	for _, c := range tl.Calls {
		if len(out) == maxCompleted {
			break
		}
		out = append(out, fmt.Sprintf("%s\t%s/%s %s", c.Call, c.Role, c.Node, statusOr(c)))
	}
	return out
}

func statusOr(c timeline.Call) string {
	if c.Status == "" {
		return "under way"
	}
	return string(c.Status)
}
