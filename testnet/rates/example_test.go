package rates_test

import (
	"fmt"

	"github.com/reconcile-p2p/reconcile/testnet/rates"
)

// Rates in bits with SI prefixes or bytes with IEC prefixes, and access
// classes of two kinds of peers.
func Example() {
	r, _ := rates.ParseRate("20Mbit")
	fmt.Println(r, rates.FormatRate(r))
	r, _ = rates.ParseRate("2MiB/s")
	fmt.Println(r)
	cls, _ := rates.ParseClasses("0.5:100Mbit/20Mbit,0.5:10Mbit/2Mbit")
	fmt.Printf("%+v\n", cls)
	_, err := rates.ParseRate("8MB")
	fmt.Println(err)
	// Output:
	// 2.5e+06 20 Mbit/s
	// 2.097152e+06
	// [{Share:0.5 Down:1.25e+07 Up:2.5e+06} {Share:0.5 Down:1.25e+06 Up:250000}]
	// testnet: bad rate: "8MB": write bits with SI prefixes (8Mbit) or bytes with IEC prefixes (1MiB/s), not MB
}
