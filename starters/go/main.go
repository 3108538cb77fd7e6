// Command cfarena-greedy is a greedy cfarena bot in Go: among the tiles it may play, it
// plays the one with the most pips (ties: the higher high end, then the lower layout
// node), a drawn tile it may keep first if that tile fits; it passes only when it has
// no play. It speaks the protocol in ../../proto/cfarena/v1/arena.proto through the Go
// code build.sh generates from it; README.md says how to build and run it.
//
//	cfarena-greedy [-server HOST:PORT] [-token T] [-capacity N] [-retries N]
//	               [-tls] [-tls-ca CA.pem]
//
// Flags default to the environment a tournament gives the bots it starts
// (CFARENA_SERVER, CFARENA_TOKEN, CFARENA_CAPACITY), then to 127.0.0.1:50051 and 1.
// -tls (CFARENA_TLS=1) connects over TLS, verifying the referee against the
// system's CA roots; -tls-ca PATH (CFARENA_TLS_CA) against that PEM file instead.
// Exit status: 0 when the referee ends the stream or on SIGTERM/SIGINT, 1 when the
// connection fails (refused, or retries used up), 2 for usage errors.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	pb "cfarena/arenapb"
)

const (
	protocol = "cfarena.v1"
	client   = "greedy (cfarena go starter 0.1.0)"
	version  = "0.1.0" // Hello.version: a competition arena rates each version apart
)

// Refusals that the same Hello would meet again: never retried.
var fatal = map[codes.Code]bool{
	codes.Unauthenticated: true, codes.PermissionDenied: true, codes.InvalidArgument: true,
	codes.FailedPrecondition: true, codes.Unimplemented: true, codes.ResourceExhausted: true,
}

// choose is the greedy choice: an index into turn.LegalMoves.
func choose(turn *pb.Turn) uint32 {
	plays := []int{}
	for i, m := range turn.GetLegalMoves() {
		if m.GetKind() == pb.MoveKind_MOVE_KIND_PLAY {
			plays = append(plays, i)
		}
	}
	if len(plays) == 0 {
		return 0 // only PASS (keep the drawn tile) is offered
	}
	// The 0-0 tile is an empty message: "no drawn tile" is a nil pointer, not a zero tile.
	if drawn := turn.GetObservation().GetDrawnTile(); drawn != nil {
		withDrawn := []int{}
		for _, i := range plays {
			t := turn.LegalMoves[i].GetTile()
			if t.GetA() == drawn.GetA() && t.GetB() == drawn.GetB() {
				withDrawn = append(withDrawn, i)
			}
		}
		if len(withDrawn) > 0 {
			plays = withDrawn
		}
	}
	best := plays[0]
	for _, i := range plays[1:] {
		if heavier(turn.LegalMoves[i], turn.LegalMoves[best]) {
			best = i
		}
	}
	return uint32(best)
}

// safeChoose is choose, or the first offered move if choose panics (a bug in the
// strategy: the bot answers, and says so, rather than crash and forfeit).
func safeChoose(turn *pb.Turn) (index uint32) {
	defer func() {
		if err := recover(); err != nil {
			log.Printf("match %s turn %d: choose panicked (%v); playing the first offered move",
				turn.GetMatchId(), turn.GetTurnId(), err)
			index = 0
		}
	}()
	return choose(turn)
}

// heavier orders plays by pips, then the high end, then the lower parent node.
func heavier(x, y *pb.Move) bool {
	px, py := x.GetTile().GetA()+x.GetTile().GetB(), y.GetTile().GetA()+y.GetTile().GetB()
	if px != py {
		return px > py
	}
	if x.GetTile().GetB() != y.GetTile().GetB() {
		return x.GetTile().GetB() > y.GetTile().GetB()
	}
	return x.GetParent() < y.GetParent()
}

// dial opens a channel to "host:port" or "unix:/path" (how a sandboxed bot is told
// the referee's socket), pinging every 10 s (the referee refuses pings more often
// than every 5 s) and giving the connection up when a ping is unanswered for 5 s.
func dial(server string, security grpc.DialOption) (*grpc.ClientConn, error) {
	opts := []grpc.DialOption{
		security,
		grpc.WithKeepaliveParams(keepalive.ClientParameters{
			Time: 10 * time.Second, Timeout: 5 * time.Second, PermitWithoutStream: true,
		}),
	}
	target := server
	if path := strings.TrimPrefix(server, "unix:"); path != server {
		target = "passthrough:///" + path
		opts = append(opts, grpc.WithAuthority("localhost"),
			grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", path)
			}))
	}
	return grpc.Dial(target, opts...)
}

// session plays one connection: Hello, Welcome, then matches until the stream ends.
// It returns whether a Welcome came and the status the stream ended with (nil: OK).
func session(ctx context.Context, server string, security grpc.DialOption, token string,
	capacity uint32) (bool, error) {
	conn, err := dial(server, security)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	stream, err := pb.NewArenaClient(conn).Play(ctx)
	if err != nil {
		return false, err
	}
	hello := &pb.Hello{Token: token, Protocol: protocol, Capacity: capacity, Client: client,
		Version: version}
	if err := stream.Send(&pb.BotMessage{Kind: &pb.BotMessage_Hello{Hello: hello}}); err != nil {
		_, err = stream.Recv() // the status that ended the stream
		return false, err
	}
	first, err := stream.Recv()
	if err != nil {
		return false, nilOnEOF(err)
	}
	welcome := first.GetWelcome()
	if welcome == nil {
		return false, status.Errorf(codes.Unimplemented,
			"the referee answered Hello with %T, not a Welcome: is it a cfarena.v1 referee?",
			first.GetKind())
	}
	log.Printf("connected to %s as '%s' (referee %s, capacity %d)", server,
		welcome.GetBotName(), welcome.GetServerVersion(), welcome.GetCapacity())
	seats := map[string]uint32{} // match id -> our seat, from MatchStart to MatchEnd
	for {
		msg, err := stream.Recv()
		if err != nil {
			return true, nilOnEOF(err)
		}
		switch kind := msg.GetKind().(type) {
		case *pb.RefereeMessage_MatchStart:
			start := kind.MatchStart
			seats[start.GetMatchId()] = start.GetSeat()
			log.Printf("match %s: seat %d of %s", start.GetMatchId(), start.GetSeat(),
				strings.Join(start.GetSeatNames(), ", "))
		case *pb.RefereeMessage_Turn:
			turn := kind.Turn
			index := uint32(0)
			if _, ok := seats[turn.GetMatchId()]; ok {
				index = safeChoose(turn)
			} else {
				log.Printf("turn %d of unknown match %s: answering move 0", turn.GetTurnId(),
					turn.GetMatchId())
			}
			action := &pb.Action{MatchId: turn.GetMatchId(), TurnId: turn.GetTurnId(),
				MoveIndex: index}
			if err := stream.Send(&pb.BotMessage{Kind: &pb.BotMessage_Action{Action: action}}); err != nil {
				_, err = stream.Recv()
				return true, nilOnEOF(err)
			}
		case *pb.RefereeMessage_MatchEnd:
			end := kind.MatchEnd
			rank := "?"
			if seat, ok := seats[end.GetMatchId()]; ok && int(seat) < len(end.GetRanks()) {
				rank = strconv.Itoa(int(end.GetRanks()[seat]))
			}
			delete(seats, end.GetMatchId())
			log.Printf("match %s over (%s): totals %v, our rank %s", end.GetMatchId(),
				end.GetReason(), end.GetTotals(), rank)
		case *pb.RefereeMessage_Notice:
			log.Printf("referee notice (match %q): %s", kind.Notice.GetMatchId(),
				kind.Notice.GetText())
		default:
			log.Printf("unexpected referee message %T ignored", kind)
		}
	}
}

func nilOnEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

func envOr(name, fallback string) string {
	if value := os.Getenv(name); value != "" {
		return value
	}
	return fallback
}

func usage(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "cfarena-greedy: error: "+format+"\n", args...)
	os.Exit(2)
}

func main() {
	log.SetFlags(log.LUTC | log.Ldate | log.Lmicroseconds)
	server := flag.String("server", envOr("CFARENA_SERVER", "127.0.0.1:50051"), "the referee, HOST:PORT or unix:PATH")
	token := flag.String("token", os.Getenv("CFARENA_TOKEN"), "the bot's secret token")
	capacityText := flag.String("capacity", envOr("CFARENA_CAPACITY", "1"), "matches played at once (1-64)")
	retries := flag.Int("retries", 10, "consecutive failed connection attempts before giving up (-1: never)")
	tls := flag.Bool("tls", os.Getenv("CFARENA_TLS") == "1", "connect over TLS (the system's CA roots)")
	tlsCA := flag.String("tls-ca", os.Getenv("CFARENA_TLS_CA"), "connect over TLS, verifying the referee against this PEM CA")
	flag.Parse()
	capacity, err := strconv.Atoi(*capacityText)
	switch {
	case flag.NArg() > 0:
		usage("unexpected argument %q (see -help)", flag.Arg(0))
	case *token == "":
		usage("no token: give -token or set CFARENA_TOKEN")
	case err != nil || capacity < 1 || capacity > 64:
		usage("-capacity must be 1-64, got %q", *capacityText)
	case *retries < -1:
		usage("-retries must be -1 (never give up) or more, got %d", *retries)
	}
	security := grpc.WithInsecure()
	if *tlsCA != "" {
		creds, err := credentials.NewClientTLSFromFile(*tlsCA, "")
		if err != nil {
			usage("-tls-ca: %v", err)
		}
		security = grpc.WithTransportCredentials(creds)
	} else if *tls {
		security = grpc.WithTransportCredentials(credentials.NewClientTLSFromCert(nil, ""))
	}

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	failures := 0
	for {
		welcomed, err := session(ctx, *server, security, *token, uint32(capacity))
		if ctx.Err() != nil {
			return // SIGTERM or SIGINT: exit 0
		}
		if err == nil {
			log.Printf("the referee closed the stream; stopping")
			return
		}
		st := status.Convert(err)
		if fatal[st.Code()] {
			log.Printf("%s refused the bot: %s: %s", *server, st.Code(), st.Message())
			os.Exit(1)
		}
		if welcomed {
			failures = 0
		}
		failures++
		if *retries != -1 && failures > *retries {
			log.Printf("cannot connect to %s: %s: %s (gave up after %d failed attempts)",
				*server, st.Code(), st.Message(), failures)
			os.Exit(1)
		}
		// 0.2 s, 0.4 s, 0.8 s ... up to 5 s, each shortened at random by up to half
		ceiling := 0.2 * float64(int(1)<<uint(min(failures-1, 5)))
		if ceiling > 5 {
			ceiling = 5
		}
		delay := time.Duration(ceiling * (0.5 + rand.Float64()/2) * float64(time.Second))
		log.Printf("connection to %s: %s: %s; retrying in %.2f s", *server, st.Code(),
			st.Message(), delay.Seconds())
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return
		}
	}
}

func min(a, b int) int {
	if a < b {
		return a
	}
	return b
}
