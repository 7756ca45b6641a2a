package jobs

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Attribute names and sort keys of the table (see the package documentation).
const (
	attrJob        = "job"
	attrSK         = "sk"
	attrState      = "state"
	attrSource     = "source"
	attrKey        = "key"
	attrETag       = "etag"
	attrName       = "name"
	attrCreated    = "created"
	attrStarted    = "started"
	attrFinished   = "finished"
	attrUpdated    = "updated"
	attrLines      = "lines"
	attrRejected   = "rejected"
	attrURLs       = "urls"
	attrShards     = "shards"
	attrShardsDone = "shards_done"
	attrDoneShards = "done_shards"
	attrSent       = "sent"
	attrTop        = "top"
	attrError      = "error"
	attrExpires    = "expires"
	attrTotal      = "total"
	attrDone       = "done"
	attrSeen       = "seen"
	classPrefix    = "c_"

	skMeta      = "meta"
	shardPrefix = "shard#"
)

// shardSK is the sort key of progress shard i.
func shardSK(i int) string { return fmt.Sprintf("%s%05d", shardPrefix, i) }

func sv(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func nv(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}
func nsv(vs ...int) types.AttributeValue {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = strconv.Itoa(v)
	}
	return &types.AttributeValueMemberNS{Value: out}
}

// millis encodes t as unix milliseconds; the zero time is 0.
func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// fromMillis decodes unix milliseconds; 0 is the zero time.
func fromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// key returns the primary key of the item sk of job id.
func key(id, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrJob: sv(id), attrSK: sv(sk)}
}

// encodeJob returns the meta item of j. Empty strings, zero numbers and zero
// times are left out (they decode to the same values).
func encodeJob(j Job) (map[string]types.AttributeValue, error) {
	item := key(j.ID, skMeta)
	for name, v := range map[string]string{
		attrState: string(j.State), attrSource: j.Source, attrKey: j.Key, attrETag: j.ETag,
		attrName: j.Name, attrError: j.Error,
	} {
		if v != "" {
			item[name] = sv(v)
		}
	}
	for name, v := range map[string]int64{
		attrCreated: millis(j.Created), attrStarted: millis(j.Started), attrFinished: millis(j.Finished),
		attrUpdated: millis(j.Updated), attrLines: int64(j.Lines), attrRejected: int64(j.Rejected),
		attrURLs: int64(j.URLs), attrShards: int64(j.Shards), attrShardsDone: int64(j.ShardsDone),
		attrSent: int64(j.Sent),
	} {
		if v != 0 {
			item[name] = nv(v)
		}
	}
	if !j.Expires.IsZero() {
		item[attrExpires] = nv(j.Expires.Unix())
	}
	if len(j.Top) > 0 {
		top, err := encodeTop(j.Top)
		if err != nil {
			return nil, err
		}
		item[attrTop] = sv(top)
	}
	return item, nil
}

func encodeTop(top []DomainCount) (string, error) {
	b, err := json.Marshal(top)
	if err != nil {
		return "", fmt.Errorf("encoding top domains: %w", err)
	}
	return string(b), nil
}

// decodeJob returns the Job a meta item stores. Absent attributes decode to
// zero values; an attribute of the wrong type or an unreadable number is an
// error naming the attribute.
func decodeJob(item map[string]types.AttributeValue) (Job, error) {
	var j Job
	var err error
	str := func(name string, dst *string) {
		if err == nil {
			*dst, err = getS(item, name)
		}
	}
	num := func(name string, dst *int) {
		if err == nil {
			var v int64
			v, err = getN(item, name)
			*dst = int(v)
		}
	}
	tm := func(name string, dst *time.Time) {
		if err == nil {
			var v int64
			v, err = getN(item, name)
			*dst = fromMillis(v)
		}
	}
	var state, top string
	str(attrJob, &j.ID)
	str(attrState, &state)
	str(attrSource, &j.Source)
	str(attrKey, &j.Key)
	str(attrETag, &j.ETag)
	str(attrName, &j.Name)
	str(attrError, &j.Error)
	str(attrTop, &top)
	tm(attrCreated, &j.Created)
	tm(attrStarted, &j.Started)
	tm(attrFinished, &j.Finished)
	tm(attrUpdated, &j.Updated)
	num(attrLines, &j.Lines)
	num(attrRejected, &j.Rejected)
	num(attrURLs, &j.URLs)
	num(attrShards, &j.Shards)
	num(attrShardsDone, &j.ShardsDone)
	num(attrSent, &j.Sent)
	if err != nil {
		return Job{}, err
	}
	j.State = State(state)
	exp, err := getN(item, attrExpires)
	if err != nil {
		return Job{}, err
	}
	if exp != 0 {
		j.Expires = time.Unix(exp, 0).UTC()
	}
	if top != "" {
		if err := json.Unmarshal([]byte(top), &j.Top); err != nil {
			return Job{}, fmt.Errorf("attribute %q: %w", attrTop, err)
		}
	}
	return j, nil
}

// getS returns the string attribute name of item, "" when absent.
func getS(item map[string]types.AttributeValue, name string) (string, error) {
	av, ok := item[name]
	if !ok {
		return "", nil
	}
	v, ok := av.(*types.AttributeValueMemberS)
	if !ok {
		return "", fmt.Errorf("attribute %q is %T, want a string", name, av)
	}
	return v.Value, nil
}

// getN returns the integer attribute name of item, 0 when absent.
func getN(item map[string]types.AttributeValue, name string) (int64, error) {
	av, ok := item[name]
	if !ok {
		return 0, nil
	}
	v, ok := av.(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("attribute %q is %T, want a number", name, av)
	}
	i, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("attribute %q: %w", name, err)
	}
	return i, nil
}

// getNS returns the number-set attribute name of item as ints, nil when
// absent.
func getNS(item map[string]types.AttributeValue, name string) ([]int, error) {
	av, ok := item[name]
	if !ok {
		return nil, nil
	}
	v, ok := av.(*types.AttributeValueMemberNS)
	if !ok {
		return nil, fmt.Errorf("attribute %q is %T, want a number set", name, av)
	}
	out := make([]int, len(v.Value))
	for i, e := range v.Value {
		x, err := strconv.Atoi(e)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", name, err)
		}
		out[i] = x
	}
	return out, nil
}

// shardView is what one shard item says.
type shardView struct {
	totalSet bool // the item has a total (Start has written it)
	total    int
	done     int
	classes  map[string]int // from the c_<class> attributes
	updated  time.Time
	seen     []int // the keys counted so far
}

// complete reports whether the shard's count has reached its total.
func (v shardView) complete() bool { return v.totalSet && v.done >= v.total }

// decodeShard returns what a shard item says.
func decodeShard(item map[string]types.AttributeValue) (shardView, error) {
	var v shardView
	_, v.totalSet = item[attrTotal]
	total, err := getN(item, attrTotal)
	if err != nil {
		return shardView{}, err
	}
	done, err := getN(item, attrDone)
	if err != nil {
		return shardView{}, err
	}
	upd, err := getN(item, attrUpdated)
	if err != nil {
		return shardView{}, err
	}
	v.total, v.done, v.updated = int(total), int(done), fromMillis(upd)
	if v.seen, err = getNS(item, attrSeen); err != nil {
		return shardView{}, err
	}
	for name := range item {
		if !strings.HasPrefix(name, classPrefix) {
			continue
		}
		c, err := getN(item, name)
		if err != nil {
			return shardView{}, err
		}
		if v.classes == nil {
			v.classes = make(map[string]int)
		}
		v.classes[strings.TrimPrefix(name, classPrefix)] = int(c)
	}
	return v, nil
}

// expr collects the placeholders of one request's expressions: every
// attribute name goes through ExpressionAttributeNames (many of ours are
// DynamoDB reserved words) and every value through ExpressionAttributeValues.
type expr struct {
	names  map[string]string // placeholder -> attribute name
	byName map[string]string // attribute name -> placeholder
	values map[string]types.AttributeValue
}

func newExpr() *expr {
	return &expr{names: map[string]string{}, byName: map[string]string{}, values: map[string]types.AttributeValue{}}
}

// name returns the placeholder ("#a3") of attribute name, the same one for
// every use in the request.
func (e *expr) name(attr string) string {
	if p, ok := e.byName[attr]; ok {
		return p
	}
	p := "#a" + strconv.Itoa(len(e.names))
	e.names[p] = attr
	e.byName[attr] = p
	return p
}

// value returns a new placeholder (":v3") for v.
func (e *expr) value(v types.AttributeValue) string {
	p := ":v" + strconv.Itoa(len(e.values))
	e.values[p] = v
	return p
}

// vals returns the values map, or nil when there is none (DynamoDB rejects
// an empty ExpressionAttributeValues).
func (e *expr) vals() map[string]types.AttributeValue {
	if len(e.values) == 0 {
		return nil
	}
	return e.values
}

// sortedKeys returns m's keys in order, for deterministic expressions.
func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
