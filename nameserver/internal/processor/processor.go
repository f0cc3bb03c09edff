// Package processor serves the NameServer's request codes on a remoting
// server: broker registration and liveness, route and cluster queries,
// topic deletion and the KV configuration. Requests are decoded with the
// typed headers of package protocol; an undecodable request is answered
// SYSTEM_ERROR with the decoding error as remark, as a Java NameServer does.
package processor

import (
	"context"
	"log/slog"

	"github.com/tidemq/tide/nameserver/internal/kvconfig"
	"github.com/tidemq/tide/nameserver/internal/routeinfo"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Processor holds what the handlers need. It has no state of its own and
// is safe for concurrent use.
type Processor struct {
	routes *routeinfo.Table
	kv     *kvconfig.Store
	log    *slog.Logger
}

// New returns a processor serving routes and kv.
func New(routes *routeinfo.Table, kv *kvconfig.Store, log *slog.Logger) *Processor {
	if log == nil {
		log = slog.Default()
	}
	return &Processor{routes: routes, kv: kv, log: log}
}

// Register installs the handlers on s, and a disconnect hook that drops
// the brokers registered on a closing connection; wrap, when not nil,
// wraps each handler (metrics). Codes not listed are
// answered REQUEST_CODE_NOT_SUPPORTED by the transport.
func (p *Processor) Register(s *remoting.Server, wrap func(code int16, h remoting.HandlerFunc) remoting.HandlerFunc) {
	handlers := map[int16]remoting.HandlerFunc{
		protocol.RegisterBroker:                p.registerBroker,
		protocol.UnregisterBroker:              p.unregisterBroker,
		protocol.QueryDataVersion:              p.queryDataVersion,
		protocol.GetRouteInfoByTopic:           p.getRouteInfo,
		protocol.GetBrokerClusterInfo:          p.getBrokerClusterInfo,
		protocol.GetAllTopicListFromNameServer: p.getAllTopicList,
		protocol.GetTopicsByCluster:            p.getTopicsByCluster,
		protocol.DeleteTopicInNameServer:       p.deleteTopic,
		protocol.PutKVConfig:                   p.putKVConfig,
		protocol.GetKVConfig:                   p.getKVConfig,
		protocol.DeleteKVConfig:                p.deleteKVConfig,
		protocol.GetKVListByNamespace:          p.getKVListByNamespace,
	}
	for code, h := range handlers {
		if wrap != nil {
			h = wrap(code, h)
		}
		s.HandleFunc(code, h)
	}
	s.OnDisconnect(func(c *remoting.Conn) { p.routes.RemoveConn(c.ID()) })
}

func systemError(req *protocol.Command, err error) *protocol.Command {
	return protocol.NewResponse(req, protocol.SystemError, err.Error())
}

func ok(req *protocol.Command) *protocol.Command {
	return protocol.NewResponse(req, protocol.Success, "")
}

func (p *Processor) registerBroker(_ context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.RegisterBrokerRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return systemError(req, err)
	}
	if h.BodyCRC32 != 0 && protocol.BodyCRC(req.Body) != h.BodyCRC32 {
		p.log.Warn("register broker: body crc32 mismatch", "broker", h.BrokerName, "addr", h.BrokerAddr, "remote", c.RemoteAddr())
		return protocol.NewResponse(req, protocol.SystemError, "crc32 not match")
	}
	// Java treats a missing body as an empty topic table at version 0.
	topics := &protocol.TopicConfigSerializeWrapper{TopicConfigTable: map[string]protocol.TopicConfig{}}
	var filters []string
	if len(req.Body) > 0 {
		body, err := protocol.DecodeRegisterBrokerBody(req.Body, h.Compressed)
		if err != nil {
			p.log.Warn("register broker: bad body", "broker", h.BrokerName, "addr", h.BrokerAddr, "err", err)
			return systemError(req, err)
		}
		topics = &body.TopicConfigSerializeWrapper
		filters = body.FilterServerList
	}
	res := p.routes.Register(routeinfo.Registration{
		ClusterName:   h.ClusterName,
		BrokerName:    h.BrokerName,
		BrokerAddr:    h.BrokerAddr,
		HAServerAddr:  h.HAServerAddr,
		BrokerID:      h.BrokerID,
		ConnID:        c.ID(),
		Topics:        topics,
		FilterServers: filters,
	})
	resp := ok(req)
	resp.ExtFields = (&protocol.RegisterBrokerResponseHeader{HAServerAddr: res.HAServerAddr, MasterAddr: res.MasterAddr}).Encode()
	if kv, found := p.kv.List(protocol.NamespaceOrderTopicConfig); found {
		resp.Body = (&protocol.KVTable{Table: kv}).Encode()
	}
	return resp
}

func (p *Processor) unregisterBroker(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.UnregisterBrokerRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return systemError(req, err)
	}
	p.routes.Unregister(h.ClusterName, h.BrokerName, h.BrokerAddr, h.BrokerID)
	return ok(req)
}

func (p *Processor) queryDataVersion(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.QueryDataVersionRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return systemError(req, err)
	}
	v, err := protocol.DecodeDataVersion(req.Body)
	if err != nil {
		return systemError(req, err)
	}
	changed, stored := p.routes.QueryDataVersion(h.BrokerAddr, v)
	resp := ok(req)
	resp.ExtFields = (&protocol.QueryDataVersionResponseHeader{Changed: changed}).Encode()
	if stored != nil {
		resp.Body = stored.Encode()
	}
	return resp
}

func (p *Processor) getRouteInfo(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.GetRouteInfoRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return systemError(req, err)
	}
	route, found := p.routes.Route(h.Topic)
	if !found {
		return protocol.NewResponse(req, protocol.TopicNotExist, "No topic route info in name server for the topic: "+h.Topic)
	}
	if conf, found := p.kv.Get(protocol.NamespaceOrderTopicConfig, h.Topic); found {
		route.OrderTopicConf = conf
	}
	resp := ok(req)
	resp.Body = route.Encode()
	return resp
}

func (p *Processor) getBrokerClusterInfo(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
	resp := ok(req)
	resp.Body = p.routes.ClusterInfo().Encode()
	return resp
}

func (p *Processor) getAllTopicList(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
	resp := ok(req)
	resp.Body = (&protocol.TopicList{TopicList: p.routes.Topics()}).Encode()
	return resp
}

func (p *Processor) getTopicsByCluster(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.GetTopicsByClusterRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return systemError(req, err)
	}
	resp := ok(req)
	resp.Body = (&protocol.TopicList{TopicList: p.routes.TopicsByCluster(h.Cluster)}).Encode()
	return resp
}

func (p *Processor) deleteTopic(_ context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.DeleteTopicInNamesrvRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return systemError(req, err)
	}
	if p.routes.DeleteTopic(h.Topic, h.ClusterName) {
		p.log.Info("topic deleted by request", "topic", h.Topic, "cluster", h.ClusterName, "remote", c.RemoteAddr())
	}
	return ok(req)
}

func (p *Processor) putKVConfig(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.PutKVConfigRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return systemError(req, err)
	}
	if err := p.kv.Put(h.Namespace, h.Key, h.Value); err != nil {
		p.log.Error("put kv config failed", "namespace", h.Namespace, "key", h.Key, "err", err)
		return systemError(req, err)
	}
	p.log.Info("kv config put", "namespace", h.Namespace, "key", h.Key, "value", h.Value)
	return ok(req)
}

func (p *Processor) getKVConfig(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.KVConfigRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return systemError(req, err)
	}
	v, found := p.kv.Get(h.Namespace, h.Key)
	if !found {
		return protocol.NewResponse(req, protocol.QueryNotFound, "No config item, Namespace: "+h.Namespace+" Key: "+h.Key)
	}
	resp := ok(req)
	resp.ExtFields = (&protocol.GetKVConfigResponseHeader{Value: v}).Encode()
	return resp
}

func (p *Processor) deleteKVConfig(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.KVConfigRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return systemError(req, err)
	}
	if err := p.kv.Delete(h.Namespace, h.Key); err != nil {
		p.log.Error("delete kv config failed", "namespace", h.Namespace, "key", h.Key, "err", err)
		return systemError(req, err)
	}
	p.log.Info("kv config deleted", "namespace", h.Namespace, "key", h.Key)
	return ok(req)
}

func (p *Processor) getKVListByNamespace(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
	var h protocol.GetKVListByNamespaceRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return systemError(req, err)
	}
	kv, found := p.kv.List(h.Namespace)
	if !found {
		return protocol.NewResponse(req, protocol.QueryNotFound, "No config item, Namespace: "+h.Namespace)
	}
	resp := ok(req)
	resp.Body = (&protocol.KVTable{Table: kv}).Encode()
	return resp
}
