// A minimal MCP Apps host for the browser tests, built only from the official packages:
// the TypeScript MCP client talks to a real `mcpgen serve --http`, and the ext-apps AppBridge
// runs each tool's app in a sandboxed iframe, as web hosts do. Bundled by esbuild (tests/apphost.py).
import { AppBridge, PostMessageTransport, getToolUiResourceUri } from "@modelcontextprotocol/ext-apps/app-bridge";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const HOST = { name: "mcpgen-test-host", version: "1.0.0" };
const UI = "io.modelcontextprotocol/ui";
const MIME = "text/html;profile=mcp-app";
let client = null;
const tools = new Map();
const resources = new Map();

// The CSP the spec tells a host to build from the resource's _meta.ui.csp (restrictive by default).
function cspFor(csp = {}) {
  const res = (csp.resourceDomains || []).join(" ");
  return [
    "default-src 'none'",
    `script-src 'self' 'unsafe-inline' ${res}`,
    `style-src 'self' 'unsafe-inline' ${res}`,
    `connect-src 'self' ${(csp.connectDomains || []).join(" ")}`,
    `img-src 'self' data: ${res}`,
    `font-src 'self' ${res}`,
    `media-src 'self' data: ${res}`,
    `frame-src ${(csp.frameDomains || []).join(" ") || "'none'"}`,
    "object-src 'none'",
    `base-uri ${(csp.baseUriDomains || []).join(" ") || "'self'"}`,
  ].join("; ");
}

function withCsp(html, csp) {
  const meta = `<meta http-equiv="Content-Security-Policy" content="${cspFor(csp)}">`;
  return html.replace(/<head>/i, "<head>" + meta);
}

window.host = {
  events: [],

  async connect() {
    client = new Client(HOST, { capabilities: { extensions: { [UI]: { mimeTypes: [MIME] } } } });
    await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", location.href)));
    tools.clear();
    for (const tool of (await client.listTools()).tools) tools.set(tool.name, tool);
    return [...tools.values()].map((t) => ({ name: t.name, resourceUri: getToolUiResourceUri(t) || null }));
  },

  // Call a tool and show its answer in the tool's app; resolves once the app has drawn it.
  async show(name, args, { theme = "light", title = null, fullscreen = false } = {}) {
    const tool = tools.get(name);
    const uri = getToolUiResourceUri(tool);
    if (!resources.has(uri)) resources.set(uri, (await client.readResource({ uri })).contents[0]);
    const resource = resources.get(uri);
    const box = document.createElement("section");
    box.className = "view";
    box.dataset.tool = name;
    box.append(Object.assign(document.createElement("h2"), { textContent: title || tool.title || name }));
    const iframe = document.createElement("iframe");
    iframe.setAttribute("sandbox", "allow-scripts");
    iframe.title = name;
    box.append(iframe);
    document.getElementById("views").append(box);

    const bridge = new AppBridge(client, HOST, { openLinks: {}, serverTools: {}, serverResources: {}, logging: {} }, {
      hostContext: {
        theme,
        locale: "en-US",
        displayMode: "inline",
        availableDisplayModes: fullscreen ? ["inline", "fullscreen"] : ["inline"],
        containerDimensions: { maxHeight: 6000 },
        platform: "web",
        toolInfo: { tool },
      },
    });
    const record = (kind, data) => window.host.events.push({ tool: name, kind, data });
    bridge.onsizechange = ({ width, height }) => {
      record("size", { width, height });
      if (height) iframe.style.height = `${height}px`;
    };
    bridge.onopenlink = async ({ url }) => { record("open-link", { url }); return {}; };
    bridge.onloggingmessage = (params) => record("log", params);
    bridge.onrequestdisplaymode = async ({ mode }) => {
      record("display-mode", { mode });
      box.classList.toggle("fullscreen", mode === "fullscreen");
      return { mode };
    };
    const initialized = new Promise((resolve) => { bridge.oninitialized = resolve; });
    await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
    iframe.srcdoc = withCsp(resource.text, resource._meta && resource._meta.ui && resource._meta.ui.csp);
    await initialized;
    record("initialized", bridge.getAppVersion());
    await bridge.sendToolInput({ arguments: args });
    const result = await client.callTool({ name, arguments: args });
    await bridge.sendToolResult(result);
    iframe.dataset.state = "sent";
    return result;
  },
};
