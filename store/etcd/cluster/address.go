// Package cluster is how crw reaches an etcd cluster: a store address
// (etcd://HOST:PORT[,HOST:PORT…]/PREFIX, with its user and TLS) parsed and checked, and a
// client dialled to it. The store on etcd (package etcd) takes the client; it never reads an
// address.
package cluster

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Scheme is the scheme of a store address on etcd: etcd://HOST:PORT[,HOST:PORT…]/PREFIX.
const Scheme = "etcd"

// PasswordEnv names the variable a user's password is read from: an address names its user,
// never a secret (an address is shown in errors and logs).
const PasswordEnv = "CRW_ETCD_PASSWORD"

// Address is where a store on etcd is: the cluster's members, the prefix its keys live under,
// and how to reach them (TLS, a user).
type Address struct {
	Endpoints []string // host:port of each member given
	Prefix    string   // "/" and the path given, no trailing "/"
	// User is the etcd user to authenticate as (its password from PasswordEnv); "" for none.
	User string
	// TLS: the members are reached over TLS, checked against CA (the system's roots when ""),
	// with the client certificate Cert and its key Key when given.
	TLS           bool
	CA, Cert, Key string
	// TTL is how long a holder of a run may go unheard before its run is free (0: DefaultTTL),
	// whole seconds from MinTTL to MaxTTL.
	TTL time.Duration
}

// A holder's TTL is at least MinTTL (etcd's leases are granted in whole seconds, and a lease
// shorter than a leader election would expire in every one) and at most MaxTTL (a run whose
// host died waits that long for another).
const (
	MinTTL = 2 * time.Second
	MaxTTL = time.Hour
)

// maxEndpoints bounds the members an address may list.
const maxEndpoints = 64

// ParseAddress reads an address: etcd://[USER@]HOST:PORT[,HOST:PORT…]/PREFIX, with the query
// parameters tls=1 (implied by any of ca, cert and key), ca=FILE, cert=FILE, key=FILE and
// ttl=DURATION (the holders' lease, e.g. 30s). A password
// in the address is refused: it would be shown wherever the address is.
func ParseAddress(s string) (Address, error) {
	var a Address
	rest, ok := strings.CutPrefix(s, Scheme+"://")
	if !ok {
		return a, fmt.Errorf("%q is not an etcd address: it starts with %s://", s, Scheme)
	}
	hosts, path, _ := strings.Cut(rest, "/")
	path, query, _ := strings.Cut(path, "?")
	if user, h, ok := strings.Cut(hosts, "@"); ok {
		if strings.Contains(user, ":") {
			return a, fmt.Errorf("%s://…: the address names a password; give it in $%s instead", Scheme, PasswordEnv)
		}
		if user == "" {
			return a, fmt.Errorf("%s://…: an empty user before @", Scheme)
		}
		a.User, hosts = user, h
	}
	if hosts == "" {
		return a, fmt.Errorf("%s://…: no member (HOST:PORT) is named", Scheme)
	}
	for _, hp := range strings.Split(hosts, ",") {
		host, port, err := net.SplitHostPort(hp)
		if err != nil || host == "" {
			return a, fmt.Errorf("%s://…: member %q is not HOST:PORT", Scheme, hp)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return a, fmt.Errorf("%s://…: member %q has no port from 1 to 65535", Scheme, hp)
		}
		a.Endpoints = append(a.Endpoints, hp)
	}
	if len(a.Endpoints) > maxEndpoints {
		return a, fmt.Errorf("%s://…: %d members named; at most %d", Scheme, len(a.Endpoints), maxEndpoints)
	}
	prefix, err := url.PathUnescape(path)
	prefix = strings.TrimSuffix(prefix, "/")
	if err != nil || prefix == "" || strings.HasPrefix(prefix, "/") || strings.ContainsAny(prefix, "\x00\n") ||
		strings.Contains("/"+prefix+"/", "/../") || strings.Contains("/"+prefix+"/", "/./") || strings.Contains("/"+prefix+"/", "//") {
		return a, fmt.Errorf("%s://…: the prefix %q is not a path like /team/crw", Scheme, path)
	}
	a.Prefix = "/" + prefix
	q, err := url.ParseQuery(query)
	if err != nil {
		return a, fmt.Errorf("%s://…: the query %q does not parse: %v", Scheme, query, err)
	}
	for name, values := range q {
		if len(values) != 1 {
			return a, fmt.Errorf("%s://…: %s is given %d times", Scheme, name, len(values))
		}
		switch v := values[0]; name {
		case "tls":
			if v != "1" && v != "0" {
				return a, fmt.Errorf("%s://…: tls is 1 or 0, not %q", Scheme, v)
			}
			a.TLS = a.TLS || v == "1"
		case "ca":
			a.CA, a.TLS = v, true
		case "cert":
			a.Cert, a.TLS = v, true
		case "key":
			a.Key, a.TLS = v, true
		case "ttl":
			ttl, err := time.ParseDuration(v)
			if err != nil || ttl%time.Second != 0 || ttl < MinTTL || ttl > MaxTTL {
				return a, fmt.Errorf("%s://…: ttl is whole seconds from %s to %s, like 30s, not %q", Scheme, MinTTL, MaxTTL, v)
			}
			a.TTL = ttl
		default:
			return a, fmt.Errorf("%s://…: unknown parameter %q (tls, ca, cert, key and ttl are)", Scheme, name)
		}
	}
	if (a.Cert == "") != (a.Key == "") {
		return a, fmt.Errorf("%s://…: a client certificate needs both cert and key", Scheme)
	}
	return a, nil
}

// String is the address as ParseAddress reads it.
func (a Address) String() string {
	var b strings.Builder
	b.WriteString(Scheme + "://")
	if a.User != "" {
		b.WriteString(a.User + "@")
	}
	b.WriteString(strings.Join(a.Endpoints, ","))
	b.WriteString((&url.URL{Path: a.Prefix}).EscapedPath())
	q := url.Values{}
	if a.TLS && a.CA == "" && a.Cert == "" {
		q.Set("tls", "1")
	}
	for name, v := range map[string]string{"ca": a.CA, "cert": a.Cert, "key": a.Key} {
		if v != "" {
			q.Set(name, v)
		}
	}
	if a.TTL != 0 {
		q.Set("ttl", a.TTL.String())
	}
	if len(q) > 0 {
		b.WriteString("?" + q.Encode())
	}
	return b.String()
}
